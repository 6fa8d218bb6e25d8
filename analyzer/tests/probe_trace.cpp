// asyncwatch_probe_trace SPEC OUT.awtrace: writes a trace of synthetic calls whose stacks are real
// return addresses of real binaries, for checking call-site selection offline on builds that cannot
// run here (static-runtime programs: the simulator runs shared-runtime builds only). The stacks come
// from test_apps/corpus/probe_sites.py, which finds the call instructions with objdump. Test tool,
// not installed. SPEC, one directive a line ('#' starts a comment; numbers in hex without 0x):
//   exe PATH                                      the program (FileHeader.executable)
//   module PATH LOW HIGH BIAS                     a ModuleRecord
//   launch API KERNEL_NAME ADDR...                a 1 ms LaunchRecord (first launch), its stack
//   copy API DRIVER_API DIR SRC_MEM DST_MEM ADDR...   a 1 ms 8 MiB CopyRecord
//   memset API DRIVER_API ADDR...                 a 1 ms MemsetRecord of pinned memory
// API names as trace_format.h spells them (cudaMemcpyAsync, cuMemcpyHtoDAsync_v2, ...); DIR:
// HtoD|DtoH|DtoD|HtoH; memory: pageable|pinned|device|managed. Exit 2 with a message on bad input.
#include "trace_builder.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using namespace asyncwatch::testing;

constexpr uint64_t kMs = 1000 * 1000;

namespace {

[[noreturn]] void fail(size_t line, const std::string& why) {
  std::cerr << "asyncwatch_probe_trace: line " << line << ": " << why << '\n';
  std::exit(2);
}

tf::Api api_of(const std::string& name, size_t line) {
  for (size_t i = 0; i < static_cast<size_t>(tf::Api::Count); ++i)
    if (name == tf::api_name(static_cast<tf::Api>(i))) return static_cast<tf::Api>(i);
  fail(line, "unknown API " + name);
}

tf::Direction direction_of(const std::string& s, size_t line) {
  if (s == "HtoD") return tf::Direction::HtoD;
  if (s == "DtoH") return tf::Direction::DtoH;
  if (s == "DtoD") return tf::Direction::DtoD;
  if (s == "HtoH") return tf::Direction::HtoH;
  fail(line, "unknown direction " + s);
}

tf::MemoryKind memory_of(const std::string& s, size_t line) {
  if (s == "pageable") return tf::MemoryKind::Pageable;
  if (s == "pinned") return tf::MemoryKind::Pinned;
  if (s == "device") return tf::MemoryKind::Device;
  if (s == "managed") return tf::MemoryKind::Managed;
  fail(line, "unknown memory kind " + s);
}

uint64_t hex_of(const std::string& s, size_t line) {
  char* end = nullptr;
  uint64_t v = std::strtoull(s.c_str(), &end, 16);
  if (s.empty() || *end) fail(line, "not a hex number: " + s);
  return v;
}

std::vector<uint64_t> addresses(std::istringstream& in, size_t line) {
  std::vector<uint64_t> out;
  std::string a;
  while (in >> a) out.push_back(hex_of(a, line));
  if (out.empty()) fail(line, "no stack");
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: asyncwatch_probe_trace SPEC OUT.awtrace\n";
    return 2;
  }
  std::ifstream spec(argv[1]);
  if (!spec) {
    std::cerr << "asyncwatch_probe_trace: cannot read " << argv[1] << '\n';
    return 2;
  }
  std::vector<std::string> lines;
  std::string exe = "/probe";
  for (std::string l; std::getline(spec, l);) {
    lines.push_back(l);
    if (l.rfind("exe ", 0) == 0) exe = l.substr(4);
  }
  TraceBuilder b(4321, exe.c_str());
  b.thread_info(1, "probe");
  b.device(1, "probe (no device)", true);
  uint64_t t = b.header().start_monotonic_ns + kMs;
  uint32_t kernels = 0;
  for (size_t n = 0; n < lines.size(); ++n) {
    std::istringstream in(lines[n]);
    std::string kind;
    if (!(in >> kind) || kind[0] == '#' || kind == "exe") continue;
    if (kind == "module") {
      std::string path, low, high, bias;
      if (!(in >> path >> low >> high >> bias)) fail(n + 1, "module PATH LOW HIGH BIAS");
      b.module(1, path, hex_of(bias, n + 1), hex_of(low, n + 1), hex_of(high, n + 1));
    } else if (kind == "launch") {
      std::string api, kernel;
      if (!(in >> api >> kernel)) fail(n + 1, "launch API KERNEL ADDR...");
      tf::Api a = api_of(api, n + 1);
      uint32_t s = b.stack(1, addresses(in, n + 1));
      uint32_t k = b.string(1, kernel);
      ++kernels;
      // every probe launch is a separate stream: no queue, first launch of its kernel string
      b.event(1, tf::RecordType::Launch,
              TraceBuilder::launch(a, k, t, t + kMs, tf::kFlagFirstLaunch, 0x10000 + kernels, s));
    } else if (kind == "copy" || kind == "memset") {
      std::string api, driver, dir = "HtoD", src = "pageable", dst = "device";
      if (!(in >> api >> driver)) fail(n + 1, kind + " API DRIVER_API ...");
      if (kind == "copy" && !(in >> dir >> src >> dst)) fail(n + 1, "copy API DRIVER_API DIR SRC DST ADDR...");
      if (kind == "memset") src = dst = "pinned";
      uint32_t s = b.stack(1, addresses(in, n + 1));
      tf::CopyRecord c = TraceBuilder::copy(api_of(api, n + 1), api_of(driver, n + 1), direction_of(dir, n + 1),
                                            memory_of(src, n + 1), memory_of(dst, n + 1), t, t + kMs, 8u << 20,
                                            tf::kFlagEvidenceChecked | tf::kFlagCompletedAtReturn, 0x5000, s);
      b.event(1, kind == "copy" ? tf::RecordType::Copy : tf::RecordType::Memset, c);
    } else {
      fail(n + 1, "unknown directive " + kind);
    }
    t += 2 * kMs;
  }
  b.end_at(t + kMs);
  b.write(argv[2]);
  return 0;
}
