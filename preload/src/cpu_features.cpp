#include "cpu_features.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if __has_include(<sys/platform/x86.h>)
#include <sys/platform/x86.h>
#endif

#include "common.h"

namespace asyncwatch::cpu_features {
namespace {

// glibc's struct cpuid_feature and the leaf indices of its CPUID_INDEX_* enum (sys/platform/x86.h,
// an ABI since glibc 2.33): the registers eax, ebx, ecx, edx of a leaf as cpuid gave them, and the
// bits glibc found usable ("active": e.g. AVX2 only where the OS saves the YMM registers).
struct GlibcLeaf {
  unsigned cpuid[4];
  unsigned active[4];
};
constexpr unsigned kLeaf7 = 1, kLeaf80000007 = 4, kEbx = 1, kEdx = 3;
constexpr unsigned kAvx2Bit = 5, kInvariantTscBit = 8;
#if __has_include(<sys/platform/x86.h>)
static_assert(sizeof(cpuid_feature) == sizeof(GlibcLeaf));
static_assert(x86_cpu_AVX2 == kLeaf7 * 128 + kEbx * 32 + kAvx2Bit);
static_assert(x86_cpu_INVARIANT_TSC == kLeaf80000007 * 128 + kEdx * 32 + kInvariantTscBit);
#endif

std::atomic<unsigned> g_bits{0};  // 0: not read yet; else 1 | avx2 << 1 | invariant_tsc << 2

}  // namespace

bool from_glibc(Features* out) noexcept {
#if defined(__x86_64__)
  ErrnoKeeper keep;
  // By version: the library needs glibc 2.28 only (docs/contracts.md).
  void* p = dlvsym(RTLD_DEFAULT, "__x86_get_cpuid_feature_leaf", "GLIBC_2.33");
  if (!p) {
    dlerror();  // the failed lookup's message is not the application's to find
    return false;
  }
  auto leaf = reinterpret_cast<const GlibcLeaf* (*)(unsigned)>(p);
  out->avx2 = (leaf(kLeaf7)->active[kEbx] >> kAvx2Bit) & 1;
  out->invariant_tsc = (leaf(kLeaf80000007)->cpuid[kEdx] >> kInvariantTscBit) & 1;
  return true;
#else
  (void)out;
  return false;
#endif
}

Features from_cpuid() noexcept {
  Features f{};
#if defined(__x86_64__)
  unsigned a, b, c, d;
  __cpuid(0, a, b, c, d);
  if (a >= 7) {
    __cpuid(1, a, b, c, d);
    if ((c & bit_OSXSAVE) && (c & bit_AVX)) {
      unsigned xcr0_lo, xcr0_hi;
      __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
      if ((xcr0_lo & 6) == 6) {  // the OS saves the XMM and YMM state
        __cpuid_count(7, 0, a, b, c, d);
        f.avx2 = (b & bit_AVX2) != 0;
      }
    }
  }
  __cpuid(0x80000000, a, b, c, d);
  if (a >= 0x80000007) {
    __cpuid(0x80000007, a, b, c, d);
    f.invariant_tsc = ((d >> kInvariantTscBit) & 1) != 0;
  }
#endif
  return f;
}

Features get() noexcept {
  unsigned bits = g_bits.load(std::memory_order_acquire);
  if (AW_UNLIKELY(!bits)) {
    Features f;
    if (!from_glibc(&f)) f = from_cpuid();
    bits = 1u | unsigned{f.avx2} << 1 | unsigned{f.invariant_tsc} << 2;
    g_bits.store(bits, std::memory_order_release);
  }
  return {(bits & 2) != 0, (bits & 4) != 0};
}

}  // namespace asyncwatch::cpu_features
