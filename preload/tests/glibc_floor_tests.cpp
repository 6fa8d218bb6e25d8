// What lets libasyncwatch.so run on glibc 2.28 with the same results as on this machine's glibc:
// cpuid against glibc's record of the CPU, and the dl_iterate_phdr walk against _dl_find_object.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include "cpu_features.h"
#include "loaded_object.h"

namespace aw = asyncwatch;

TEST(CpuFeatures, CpuidAgreesWithGlibcsRecord) {
  aw::cpu_features::Features glibc{};
  if (!aw::cpu_features::from_glibc(&glibc)) GTEST_SKIP() << "this glibc has no record of the CPU (before 2.33)";
  const aw::cpu_features::Features cpuid = aw::cpu_features::from_cpuid();
  EXPECT_EQ(cpuid.avx2, glibc.avx2);
  EXPECT_EQ(cpuid.invariant_tsc, glibc.invariant_tsc);
  const aw::cpu_features::Features used = aw::cpu_features::get();
  EXPECT_EQ(used.avx2, glibc.avx2);
  EXPECT_EQ(used.invariant_tsc, glibc.invariant_tsc);
  EXPECT_EQ(dlerror(), nullptr);  // no lookup's message left for the program
}

namespace {
int in_this_program = 1;
int function_here() { return in_this_program; }
}  // namespace

TEST(LoadedObject, WalkAgreesWithDlFindObject) {
  if (!aw::loaded_objects::have_dl_find_object()) GTEST_SKIP() << "this glibc has no _dl_find_object (before 2.35)";
  int on_stack = 0;
  const void* in_libc = dlsym(RTLD_DEFAULT, "getpid");
  const void* in_loader = dlsym(RTLD_DEFAULT, "_dl_find_object");
  ASSERT_NE(in_libc, nullptr);
  ASSERT_NE(in_loader, nullptr);
  const void* addrs[] = {reinterpret_cast<const void*>(&function_here), &in_this_program, in_libc, in_loader,
                         &on_stack};
  int found = 0;
  for (const void* a : addrs) {
    SCOPED_TRACE(a);
    aw::LoadedObject fast{}, walk{};
    const bool by_glibc = aw::find_loaded_object(a, &fast);
    const bool by_walk = aw::loaded_objects::find_by_phdr_walk(a, &walk);
    ASSERT_EQ(by_walk, by_glibc);
    if (!by_glibc) continue;
    ++found;
    EXPECT_EQ(walk.map, fast.map);
    EXPECT_EQ(walk.low, fast.low);
    EXPECT_EQ(walk.high, fast.high);
    EXPECT_EQ(walk.eh_frame, fast.eh_frame);
    EXPECT_TRUE(reinterpret_cast<uintptr_t>(a) - fast.low < fast.high - fast.low);
  }
  EXPECT_EQ(found, 4);  // all but the stack
}
