// Prints a trace's records one per line (a debugging aid for the preload tests; the analyzer's
// `asyncwatch dump` is the user-facing tool).
#include <cstdio>
#include <map>
#include <string>

#include "trace_reader.h"

using namespace asyncwatch::trace;

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  aw_test::Trace t = aw_test::read_trace(argv[1]);
  if (!t.ok) {
    fprintf(stderr, "%s\n", t.error.c_str());
    return 2;
  }
  printf("pid %lu closed=%s lost=%lu exe=%s\n", (unsigned long)t.header.pid,
         t.header.closed == kClosedCleanly ? "yes" : "no", (unsigned long)t.header.records_lost, t.header.executable);
  std::map<uint32_t, std::string> strings;
  for (auto& r : t.records)
    if (r.type() == RecordType::String) {
      auto s = r.as<StringRecord>();
      strings[s.string_id] = std::string(r.bytes.data() + sizeof(StringRecord), s.len);
    }
  std::map<std::string, int> counts;
  for (auto& r : t.records) {
    switch (r.type()) {
      case RecordType::Copy:
      case RecordType::Memset: {
        auto c = r.as<CopyRecord>();
        std::string key = std::string(api_name(Api(c.api))) + "/" + api_name(Api(c.driver_fn));
        if (c.bytes == 64 && ++counts[key] > 3) break;
        printf(
            "%s api=%s driver=%s dir=%d src=%d dst=%d stream_kind=%d bytes=%lu blocked_us=%.1f flags=0x%x stack=%u\n",
            r.type() == RecordType::Copy ? "COPY" : "MEMSET", api_name(Api(c.api)), api_name(Api(c.driver_fn)),
            c.direction, c.src_memory, c.dst_memory, c.stream_kind, (unsigned long)c.bytes,
            (c.end_ns - c.start_ns) / 1000.0, c.flags, c.stack_id);
        break;
      }
      case RecordType::Launch: {
        auto l = r.as<LaunchRecord>();
        if (++counts["launch"] > 4) break;
        printf("LAUNCH api=%s driver=%s kernel=%s grid=%u block=%u blocked_us=%.1f flags=0x%x\n", api_name(Api(l.api)),
               api_name(Api(l.driver_fn)), strings[l.kernel_name_id].c_str(), l.grid[0], l.block[0],
               (l.end_ns - l.start_ns) / 1000.0, l.flags);
        break;
      }
      case RecordType::HostFuncEnqueue: {
        auto e = r.as<HostFuncEnqueueRecord>();
        printf("HOSTFUNC api=%s driver=%s id=%lu\n", api_name(Api(e.api)), api_name(Api(e.driver_fn)),
               (unsigned long)e.callback_id);
        break;
      }
      case RecordType::HostFuncRun: {
        auto e = r.as<HostFuncRunRecord>();
        printf("HOSTFUNC_RUN id=%lu ran_us=%.1f\n", (unsigned long)e.callback_id, (e.end_ns - e.start_ns) / 1000.0);
        break;
      }
      case RecordType::Sync: {
        auto s = r.as<SyncRecord>();
        if (++counts["sync"] > 6) break;
        printf("SYNC api=%s driver=%s waited_us=%.1f\n", api_name(Api(s.api)), api_name(Api(s.driver_fn)),
               (s.end_ns - s.start_ns) / 1000.0);
        break;
      }
      case RecordType::MemoryOp: {
        auto m = r.as<MemoryOpRecord>();
        printf("MEMOP api=%s driver=%s kind=%d bytes=%lu flags=0x%x\n", api_name(Api(m.api)),
               api_name(Api(m.driver_fn)), m.memory, (unsigned long)m.bytes, m.flags);
        break;
      }
      case RecordType::StreamCreate: {
        auto s = r.as<StreamCreateRecord>();
        printf("STREAM api=%s driver=%s flags=%u\n", api_name(Api(s.api)), api_name(Api(s.driver_fn)), s.stream_flags);
        break;
      }
      case RecordType::DeviceInfo: {
        auto d = r.as<DeviceInfoRecord>();
        printf("DEVICE %s driver=%d simulated=%u\n", d.name, d.driver_version, d.simulated);
        break;
      }
      default: counts[std::string("type") + std::to_string(int(r.type()))]++;
    }
  }
  for (auto& [k, v] : counts) printf("count %s = %d\n", k.c_str(), v);
  return 0;
}
