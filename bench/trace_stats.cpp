// trace_stats: how many bytes of an asyncwatch trace hold records, for run_overhead.sh's
// "trace bytes per call" (a trace file grows in 64 KiB blocks per thread and 4 MiB segments, so
// its size alone is coarse). Walks every block with trace_io.h's framing walk (names from the
// record table of trace_format.h).
//
// usage: trace_stats TRACE...
// Prints per file, one line:
//   file=PATH file_bytes=N blocks=N record_bytes=N records=N closed=0|1 Copy=count/bytes Launch=...
//   record_bytes: the bytes of all records (block headers, block tails and the file header excluded).
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "asyncwatch/trace_format.h"
#include "asyncwatch/trace_io.h"

namespace tf = asyncwatch::trace;

namespace {

int stats(const char* path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::perror(path);
    return 1;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(tf::kHeaderSize)) {
    std::fprintf(stderr, "%s: not a trace (too short)\n", path);
    close(fd);
    return 1;
  }
  size_t size = static_cast<size_t>(st.st_size);
  void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) {
    std::perror(path);
    return 1;
  }
  const auto* base = static_cast<const unsigned char*>(map);
  tf::FileHeader h;
  uint64_t count[tf::kRecordTypeLimit] = {}, bytes[tf::kRecordTypeLimit] = {};
  uint64_t record_bytes = 0, records = 0;
  uint64_t last_block = UINT64_MAX, blocks = 0;
  bool ok = asyncwatch::trace_io::for_each_record(
      base, size, &h, [&](uint64_t b, const tf::BlockHeader&, const asyncwatch::trace_io::RawRecord& r) {
        if (b != last_block) ++blocks, last_block = b;
        ++records;
        record_bytes += r.size;
        count[r.type]++;
        bytes[r.type] += r.size;
      });
  if (!ok) {
    std::fprintf(stderr, "%s: not an asyncwatch trace (magic, version or sizes)\n", path);
    munmap(map, size);
    return 1;
  }
  std::printf("file=%s file_bytes=%zu blocks=%llu record_bytes=%llu records=%llu closed=%d", path, size,
              static_cast<unsigned long long>(blocks), static_cast<unsigned long long>(record_bytes),
              static_cast<unsigned long long>(records), h.closed == tf::kClosedCleanly ? 1 : 0);
  for (uint16_t t = 1; t < tf::kRecordTypeLimit; ++t)
    if (count[t])
      std::printf(" %s=%llu/%llu", tf::record_type_text(static_cast<tf::RecordType>(t)),
                  static_cast<unsigned long long>(count[t]), static_cast<unsigned long long>(bytes[t]));
  std::printf("\n");
  munmap(map, size);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: trace_stats TRACE...\n");
    return 2;
  }
  int rc = 0;
  for (int i = 1; i < argc; ++i) rc |= stats(argv[i]);
  return rc;
}
