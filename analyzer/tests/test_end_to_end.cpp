// The whole offline path on real addresses: this test binary plays an application linked
// with a static CUDA runtime (functions named cudaMemcpyAsync and cuMemcpyDtoHAsync_v2 inside
// the executable), captures its own stack the way the preload library does, writes a trace
// with its real modules, and checks that the report names the user's source line and the
// runtime API.
#include "findings/analysis.h"
#include "report/reports.h"
#include "test_util.h"
#include "via_fixtures.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <gtest/gtest.h>
#include <link.h>
#include <unistd.h>

#include <fmt/format.h>
#include <sstream>

using namespace asyncwatch;
using namespace asyncwatch::testing;

namespace {

std::vector<uint64_t> g_frames;

int add_module(dl_phdr_info* info, size_t, void* data) {
  auto* b = static_cast<TraceBuilder*>(data);
  uint64_t low = UINT64_MAX, high = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    low = std::min<uint64_t>(low, info->dlpi_addr + ph.p_vaddr);
    high = std::max<uint64_t>(high, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
  }
  std::string path = info->dlpi_name ? info->dlpi_name : "";
  if (path.empty()) {
    char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return 0;
    path.assign(buf, static_cast<size_t>(n));
  }
  if (path.find("linux-vdso") != std::string::npos) return 0;
  b->module(1, path, info->dlpi_addr, low, high);
  return 0;
}

}  // namespace

// The "driver" and the "static runtime", inside the executable.
extern "C" __attribute__((noinline)) int cuMemcpyDtoHAsync_v2(void*, unsigned long long, size_t, void*) {
  void* frames[32];
  int n = backtrace(frames, 32);
  g_frames.clear();
  // Under a sanitizer, backtrace() is intercepted: drop the interceptor's own frames (the
  // preload library likewise starts the stack at its hook, a frame the analyzer skips).
  int first = 0;
  Dl_info self{}, here{};
  dladdr(reinterpret_cast<void*>(&cuMemcpyDtoHAsync_v2), &self);
  while (first < n && dladdr(frames[first], &here) && here.dli_fbase != self.dli_fbase) ++first;
  for (int i = first; i < n; ++i) g_frames.push_back(reinterpret_cast<uint64_t>(frames[i]));
  asm volatile("" ::: "memory");
  return 0;
}

extern "C" __attribute__((noinline)) int cudaMemcpyAsync(void* dst, const void* src, size_t n, int, void* stream) {
  int rc = cuMemcpyDtoHAsync_v2(dst, reinterpret_cast<unsigned long long>(src), n, stream);
  asm volatile("" ::: "memory");
  return rc;
}

const int kCopyLine = __LINE__ + 3;
__attribute__((noinline)) void copy_results_back(std::vector<char>& host) {
  asm volatile("" ::: "memory");
  cudaMemcpyAsync(host.data(), nullptr, host.size(), 2, nullptr);  // the call site
  asm volatile("" ::: "memory");
}

// A user function named like a runtime API (cuda + an upper-case letter), calling the "static
// runtime" through an inline helper: the site is the helper's line, the API cudaMemcpyAsync.
const int kInlineCopyLine = __LINE__ + 3;
__attribute__((always_inline)) inline void copy_in_inline_helper(std::vector<char>& host) {
  asm volatile("" ::: "memory");
  cudaMemcpyAsync(host.data(), nullptr, host.size(), 2, nullptr);
  asm volatile("" ::: "memory");
}
extern "C" __attribute__((noinline)) void cudaGraphsManual(std::vector<char>& host) {
  copy_in_inline_helper(host);
  asm volatile("" ::: "memory");
}

TEST(EndToEnd, StaticRuntimeCallSiteAndApiFromRealSymbols) {
  std::vector<char> host(16);
  copy_results_back(host);
  ASSERT_GE(g_frames.size(), 3u);

  TraceBuilder b(9000, "/proc/self/exe");
  b.thread_info(1, "main");
  dl_iterate_phdr(add_module, &b);
  uint32_t s = b.stack(1, g_frames);
  uint64_t t = b.header().start_monotonic_ns + kMs;
  b.event(1, tf::RecordType::Copy,
          TraceBuilder::copy(tf::Api::cuMemcpyDtoHAsync_v2, tf::Api::cuMemcpyDtoHAsync_v2, tf::Direction::DtoH,
                             tf::MemoryKind::Device, tf::MemoryKind::Pageable, t, t + 4790 * kUs, 4 << 20,
                             tf::kFlagEvidenceChecked | tf::kFlagCompletedAtReturn, 0x5000, s));
  Report r = analyze_traces({write_trace(b, "end-to-end.awtrace")}, Options{});
  ASSERT_EQ(r.findings.size(), 1u);
  const Finding& f = r.findings[0];
  EXPECT_EQ(f.api, "cudaMemcpyAsync");
  EXPECT_EQ(f.driver_api, "cuMemcpyDtoHAsync_v2");
  ASSERT_TRUE(f.call_site_known);
  EXPECT_NE(f.call_site.function.find("copy_results_back"), std::string::npos) << f.call_site.function;
  EXPECT_NE(f.call_site.file.find("test_end_to_end.cpp"), std::string::npos) << f.call_site.file;
  EXPECT_EQ(f.call_site.line, kCopyLine);
  std::ostringstream text;
  write_report_text(text, r, TextStyle{});
  EXPECT_NE(text.str().find(fmt::format("test_end_to_end.cpp:{}: warning: cudaMemcpyAsync (device to host, 4.0 MiB) "
                                        "blocked 4.79 ms: the destination is pageable host memory",
                                        kCopyLine)),
            std::string::npos)
      << text.str();
}

TEST(EndToEnd, UserFunctionNamedCudaSomethingAndInlineFramesFromRealSymbols) {
  std::vector<char> host(16);
  cudaGraphsManual(host);
  ASSERT_GE(g_frames.size(), 3u);
  TraceBuilder b(9001, "/proc/self/exe");
  b.thread_info(1, "main");
  dl_iterate_phdr(add_module, &b);
  uint32_t s = b.stack(1, g_frames);
  uint64_t t = b.header().start_monotonic_ns + kMs;
  b.event(1, tf::RecordType::Copy,
          TraceBuilder::copy(tf::Api::cuMemcpyDtoHAsync_v2, tf::Api::cuMemcpyDtoHAsync_v2, tf::Direction::DtoH,
                             tf::MemoryKind::Device, tf::MemoryKind::Pageable, t, t + 2 * kMs, 1 << 20,
                             tf::kFlagEvidenceChecked | tf::kFlagCompletedAtReturn, 0x5000, s));
  Report r = analyze_traces({write_trace(b, "end-to-end-inline.awtrace")}, Options{});
  ASSERT_EQ(r.findings.size(), 1u);
  const Finding& f = r.findings[0];
  EXPECT_EQ(f.api, "cudaMemcpyAsync");  // never the user's cudaGraphsManual
  ASSERT_TRUE(f.call_site_known);
  EXPECT_NE(f.call_site.function.find("copy_in_inline_helper"), std::string::npos) << f.call_site.function;
  EXPECT_TRUE(f.call_site.inlined);
  EXPECT_EQ(f.call_site.line, kInlineCopyLine);
  EXPECT_TRUE(f.via.module.empty());
  // the expanded stack: the inline helper, then cudaGraphsManual at its call of the helper
  bool saw_caller = false;
  for (size_t i = 0; i + 1 < f.stack.size(); ++i)
    if (f.stack[i].function.find("copy_in_inline_helper") != std::string::npos)
      saw_caller = f.stack[i + 1].function == "cudaGraphsManual";
  EXPECT_TRUE(saw_caller);
}

// A trace from another machine: the modules are not where the trace says; --path-map FROM=TO
// reads them from here. The frames keep the traced path.
TEST(EndToEnd, PathMapReadsModulesFromElsewhere) {
  std::vector<char> host(16);
  copy_results_back(host);
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  ASSERT_GT(n, 0);
  std::string exe(self, static_cast<size_t>(n));
  std::string dir = exe.substr(0, exe.rfind('/'));
  const std::string elsewhere = "/nonexistent/h200/build";
  TraceBuilder b(9002, "/nonexistent/h200/build/app");
  b.thread_info(1, "main");
  struct Ctx {
    TraceBuilder* b;
    std::string exe, elsewhere, dir;
  } ctx{&b, exe, elsewhere, dir};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* c = static_cast<Ctx*>(data);
        if (info->dlpi_name && info->dlpi_name[0]) return 0;  // the executable only
        uint64_t low = UINT64_MAX, high = 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          low = std::min<uint64_t>(low, info->dlpi_addr + ph.p_vaddr);
          high = std::max<uint64_t>(high, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
        }
        c->b->module(1, c->elsewhere + c->exe.substr(c->dir.size()), info->dlpi_addr, low, high);
        return 1;
      },
      &ctx);
  uint32_t s = b.stack(1, g_frames);
  uint64_t t = b.header().start_monotonic_ns + kMs;
  b.event(1, tf::RecordType::Copy,
          TraceBuilder::copy(tf::Api::cuMemcpyDtoHAsync_v2, tf::Api::cuMemcpyDtoHAsync_v2, tf::Direction::DtoH,
                             tf::MemoryKind::Device, tf::MemoryKind::Pageable, t, t + 2 * kMs, 1 << 20, 0, 0x5000, s));
  std::string path = write_trace(b, "end-to-end-path-map.awtrace");
  Report unmapped = analyze_traces({path}, Options{});
  ASSERT_EQ(unmapped.findings.size(), 1u);
  EXPECT_TRUE(unmapped.findings[0].call_site.file.empty());
  Options o;
  o.path_map.push_back(PathMapping{elsewhere, dir});
  Report r = analyze_traces({path}, o);
  ASSERT_EQ(r.findings.size(), 1u);
  const Finding& f = r.findings[0];
  EXPECT_EQ(f.call_site.line, kCopyLine);
  EXPECT_NE(f.call_site.function.find("copy_results_back"), std::string::npos);
  EXPECT_EQ(f.call_site.module.rfind(elsewhere, 0), 0u) << f.call_site.module;  // as traced
  EXPECT_EQ(f.api, "cudaMemcpyAsync");
}

// A copy made inside a library that the user called through a function that tail-called (jmp)
// another (cufftExecC2C jumps to cufftXtExec): only the second has a frame, but the finding says
// "via" the function the user's call instruction called, read from the module files on disk.
namespace {

const int kPltCallLine = __LINE__ + 3;
__attribute__((noinline)) int call_vendor_through_plt(aw_copy_fn copy, void* dst, size_t n) {
  asm volatile("" ::: "memory");
  int rc = aw_vendor_exec_c2c(copy, dst, n);  // the call site
  asm volatile("" : "+r"(rc));
  return rc;
}

const int kPltGotCallLine = __LINE__ + 3;
__attribute__((noinline)) int call_vendor_r2c_through_plt(aw_copy_fn copy, void* dst, size_t n) {
  asm volatile("" ::: "memory");
  int rc = aw_vendor_exec_r2c(copy, dst, n);  // the call site
  asm volatile("" : "+r"(rc));
  return rc;
}

const int kLocalCallLine = __LINE__ + 3;
__attribute__((noinline)) int call_local_library(aw_copy_fn copy, void* dst, size_t n) {
  asm volatile("" ::: "memory");
  int rc = aw_local_exec_c2c(copy, dst, n);  // the call site
  asm volatile("" : "+r"(rc));
  return rc;
}

bool stack_has_function(const std::vector<Frame>& stack, const std::string& name) {
  for (const Frame& f : stack)
    if (f.function == name) return true;
  return false;
}

// Runs `user_call` (which reaches the "static runtime" above through a library), traces its stack
// with the process's modules (their paths prefixed with `prefix`) and reports it.
Report via_report(int (*user_call)(aw_copy_fn, void*, size_t), const char* trace_name, const Options& o,
                  const std::string& prefix = {}) {
  std::vector<char> host(16);
  g_frames.clear();
  user_call(cudaMemcpyAsync, host.data(), host.size());
  EXPECT_GE(g_frames.size(), 4u);
  TraceBuilder b(9003, "/proc/self/exe");
  b.thread_info(1, "main");
  struct Ctx {
    TraceBuilder* b;
    std::string prefix;
  } ctx{&b, prefix};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* c = static_cast<Ctx*>(data);
        uint64_t low = UINT64_MAX, high = 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          low = std::min<uint64_t>(low, info->dlpi_addr + ph.p_vaddr);
          high = std::max<uint64_t>(high, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
        }
        std::string path = info->dlpi_name ? info->dlpi_name : "";
        if (path.empty()) {
          char buf[4096];
          ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
          if (n <= 0) return 0;
          path.assign(buf, static_cast<size_t>(n));
        }
        if (path.find("linux-vdso") != std::string::npos) return 0;
        c->b->module(1, c->prefix + path, info->dlpi_addr, low, high);
        return 0;
      },
      &ctx);
  uint32_t s = b.stack(1, g_frames);
  uint64_t t = b.header().start_monotonic_ns + kMs;
  b.event(1, tf::RecordType::Copy,
          TraceBuilder::copy(tf::Api::cuMemcpyDtoHAsync_v2, tf::Api::cuMemcpyDtoHAsync_v2, tf::Direction::DtoH,
                             tf::MemoryKind::Device, tf::MemoryKind::Pageable, t, t + 2 * kMs, 1 << 20,
                             tf::kFlagEvidenceChecked | tf::kFlagCompletedAtReturn, 0x5000, s));
  return analyze_traces({write_trace(b, trace_name)}, o);
}

std::string module_name(const std::string& path) { return path.substr(path.rfind('/') + 1); }

}  // namespace

TEST(EndToEnd, ViaNamesTheLibraryFunctionCalledThroughThePltThatTailCalled) {
  Report r = via_report(call_vendor_through_plt, "end-to-end-via-plt.awtrace", Options{});
  ASSERT_EQ(r.findings.size(), 1u);
  const Finding& f = r.findings[0];
  // The tail call left no frame of aw_vendor_exec_c2c: the library's frame is aw_vendor_exec.
  ASSERT_FALSE(stack_has_function(f.stack.frames(), "aw_vendor_exec_c2c"));
  ASSERT_TRUE(stack_has_function(f.stack.frames(), "aw_vendor_exec"));
  EXPECT_NE(f.call_site.function.find("call_vendor_through_plt"), std::string::npos) << f.call_site.function;
  EXPECT_EQ(f.call_site.line, kPltCallLine);
  EXPECT_EQ(f.via.function, "aw_vendor_exec_c2c");
  EXPECT_EQ(module_name(f.via.module), "libaw_test_vendor.so");
  std::ostringstream text;
  write_report_text(text, r, TextStyle{});
  EXPECT_NE(text.str().find("via aw_vendor_exec_c2c (libaw_test_vendor.so)"), std::string::npos) << text.str();
  EXPECT_EQ(text.str().find("via aw_vendor_exec "), std::string::npos) << text.str();
}

TEST(EndToEnd, ViaNamesTheLibraryFunctionCalledThroughTheGotWithoutPlt) {
  Report r = via_report(call_vendor_without_plt, "end-to-end-via-noplt.awtrace", Options{});
  ASSERT_EQ(r.findings.size(), 1u);
  const Finding& f = r.findings[0];
  ASSERT_FALSE(stack_has_function(f.stack.frames(), "aw_vendor_exec_r2c"));
  EXPECT_NE(f.call_site.function.find("call_vendor_without_plt"), std::string::npos) << f.call_site.function;
  EXPECT_EQ(f.call_site.line, kNoPltCallLine);
  EXPECT_EQ(f.via.function, "aw_vendor_exec_r2c");
  EXPECT_EQ(module_name(f.via.module), "libaw_test_vendor.so");
  // The same function through the PLT: its stub is in .plt.got (the slot is GLOB_DAT's).
  Report p = via_report(call_vendor_r2c_through_plt, "end-to-end-via-plt-got.awtrace", Options{});
  ASSERT_EQ(p.findings.size(), 1u);
  EXPECT_EQ(p.findings[0].call_site.line, kPltGotCallLine);
  EXPECT_EQ(p.findings[0].via.function, "aw_vendor_exec_r2c");
}

TEST(EndToEnd, ViaNamesALibraryFunctionOfTheSameModuleThatTailCalled) {
  Options o;
  o.user_code.push_back("!*via_local_lib.cpp");  // the executable's own "library" code
  Report r = via_report(call_local_library, "end-to-end-via-local.awtrace", o);
  ASSERT_EQ(r.findings.size(), 1u);
  const Finding& f = r.findings[0];
  ASSERT_FALSE(stack_has_function(f.stack.frames(), "aw_local_exec_c2c"));
  ASSERT_TRUE(stack_has_function(f.stack.frames(), "aw_local_exec"));
  EXPECT_NE(f.call_site.function.find("call_local_library"), std::string::npos) << f.call_site.function;
  EXPECT_EQ(f.call_site.line, kLocalCallLine);
  EXPECT_EQ(f.via.function, "aw_local_exec_c2c");
  EXPECT_EQ(f.via.module, f.call_site.module);
  // Without the override the "library" is the user's own code: the call site is aw_local_exec.
  Report plain = via_report(call_local_library, "end-to-end-via-local-user.awtrace", Options{});
  ASSERT_EQ(plain.findings.size(), 1u);
  EXPECT_EQ(plain.findings[0].call_site.function, "aw_local_exec");
  EXPECT_TRUE(plain.findings[0].via.module.empty());
}

// The call instruction and the library's symbols are read from the files that --path-map names.
TEST(EndToEnd, ViaReadsTheCallFromModulesThatPathMapNames) {
  const std::string elsewhere = "/nonexistent/h200/root";
  Report unmapped = via_report(call_vendor_through_plt, "end-to-end-via-unmapped.awtrace", Options{}, elsewhere);
  ASSERT_EQ(unmapped.findings.size(), 1u);
  EXPECT_NE(unmapped.findings[0].via.function, "aw_vendor_exec_c2c");
  Options o;
  o.path_map.push_back(PathMapping{elsewhere, "/"});
  Report r = via_report(call_vendor_through_plt, "end-to-end-via-mapped.awtrace", o, elsewhere);
  ASSERT_EQ(r.findings.size(), 1u);
  const Finding& f = r.findings[0];
  EXPECT_EQ(f.call_site.line, kPltCallLine);
  EXPECT_EQ(f.via.function, "aw_vendor_exec_c2c");
  EXPECT_EQ(f.via.module.rfind(elsewhere, 0), 0u) << f.via.module;  // as traced
}
