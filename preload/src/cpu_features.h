// What the stack capture and the clock ask of the CPU: AVX2 usable, invariant TSC.
#pragma once

namespace asyncwatch::cpu_features {

struct Features {
  bool avx2;           // the CPU has AVX2 and the OS saves the YMM registers
  bool invariant_tsc;  // constant rate, runs in every C-/P-state (leaf 0x80000007)
};

// Read once. From glibc's record of the CPU (2.33 and later: read by the loader at start) where the
// running glibc has one, else with cpuid: each cpuid is a hypervisor exit in a VM (5.9 us each on
// the development VM, where the four leaves were 42 us of every traced process's start-up; 20 to
// 70 us each on a busy 2-core VM), which glibc's record spares the process.
Features get() noexcept;

// Both sources, for the tests: glibc's (false where the running glibc has none), and cpuid's.
bool from_glibc(Features* out) noexcept;
Features from_cpuid() noexcept;

}  // namespace asyncwatch::cpu_features
