// Helpers of the fix pairs (fix_*.cu; test_apps/apps/fix_pairs.py): each program runs one loop in two
// variants, the one asyncwatch flags (default) and the one its finding's fix makes (--fixed as the
// first argument), with the same set-up in both so that the wall-time difference of two runs is the
// fix's effect on the loop.
#pragma once

#include "aw_common.h"

namespace aw {

// True when argv[1] is "--fixed"; the numeric arguments then start at argv[2] (`first_arg`).
inline bool fixed_variant(int argc, char** argv, int* first_arg) {
  const bool fixed = argc > 1 && std::strcmp(argv[1], "--fixed") == 0;
  *first_arg = fixed ? 2 : 1;
  return fixed;
}

// Host work that does not touch the GPU: a busy loop of `us` microseconds.
inline void host_work(long long us) {
  const long long end = now_ns() + us * 1000;
  volatile unsigned x = 1;
  while (now_ns() < end) x = x * 1664525u + 1013904223u;
}

}  // namespace aw
