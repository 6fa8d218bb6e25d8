// trace_stats: how many bytes of an asyncwatch trace hold records, for run_overhead.sh's
// "trace bytes per call" (a trace file grows in 64 KiB blocks per thread and 4 MiB segments, so
// its size alone is coarse). Walks every block the way a reader does (BlockHeader, then records
// until a zero RecordHeader) using only asyncwatch/trace_format.h.
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

namespace tf = asyncwatch::trace;

namespace {

const char* type_name(uint16_t t) {
  static const char* const names[] = {"None",     "ThreadInfo", "Module", "Stack",         "String",
                                      "Copy",     "Memset",     "Launch", "HostFuncEnqueue", "HostFuncRun",
                                      "Sync",     "MemoryOp",   "StreamCreate", "StreamDestroy", "Capture",
                                      "Lost",     "DeviceInfo"};
  return t < sizeof names / sizeof names[0] ? names[t] : "Unknown";
}

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
  std::memcpy(&h, base, sizeof h);
  if (std::memcmp(h.magic, tf::kMagic, sizeof h.magic) != 0 || h.block_size == 0) {
    std::fprintf(stderr, "%s: not an asyncwatch trace\n", path);
    munmap(map, size);
    return 1;
  }
  uint64_t count[64] = {}, bytes[64] = {};
  uint64_t blocks = 0, record_bytes = 0, records = 0;
  for (size_t off = h.header_size; off + h.block_size <= size; off += h.block_size) {
    tf::BlockHeader bh;
    std::memcpy(&bh, base + off, sizeof bh);
    if (bh.magic != tf::kBlockMagic) continue;
    ++blocks;
    size_t pos = sizeof(tf::BlockHeader);
    while (pos + sizeof(tf::RecordHeader) <= h.block_size) {
      tf::RecordHeader rh;
      std::memcpy(&rh, base + off + pos, sizeof rh);
      if (rh.type == 0 || rh.size < sizeof rh || pos + rh.size > h.block_size) break;
      ++records;
      record_bytes += rh.size;
      count[rh.type & 63]++;
      bytes[rh.type & 63] += rh.size;
      pos += rh.size;
    }
  }
  std::printf("file=%s file_bytes=%zu blocks=%llu record_bytes=%llu records=%llu closed=%d", path, size,
              static_cast<unsigned long long>(blocks), static_cast<unsigned long long>(record_bytes),
              static_cast<unsigned long long>(records), h.closed == tf::kClosedCleanly ? 1 : 0);
  for (int t = 1; t < 64; ++t)
    if (count[t])
      std::printf(" %s=%llu/%llu", type_name(static_cast<uint16_t>(t)), static_cast<unsigned long long>(count[t]),
                  static_cast<unsigned long long>(bytes[t]));
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
