#!/usr/bin/env bash
# The fifteenth session's H200 check (docs/validation.md, 2026-12-04), from the repository root.
# Stage a small build first (it fits the carry limit as it is):
#   build-gpu10/lib/libasyncwatch.so (this library), build-gpu10/lib/before/libasyncwatch.so (the
#   one before, 2d3b076), build-gpu10/lib/asyncwatch/sim/, build-gpu10/test_apps/{startup_one_call,
#   overhead_bench,overhead_bench.static}; strip -g the two libraries.
#   bash test_apps/gpu/device_batch10.sh a   # carry build-gpu10: start-up of both libraries taking
#       turns run by run (startup.sh with two --lib), on the whole machine and on one core, then
#       recording on vs paused for both (static runtime) and this one (shared runtime)
set -uo pipefail
. test_apps/gpu/batch_common.sh
case ${1:-} in
  a)
    B=build-gpu10
    gpu_info
    for r in 1 2 3; do
      timeout 90 bash test_apps/bench/startup.sh $B --runs 301 --lib $B/lib/before/libasyncwatch.so \
        --lib $B/lib/libasyncwatch.so > $OUT/startup_all$r.txt 2>&1
      echo "== startup_all$r"; cat $OUT/startup_all$r.txt
    done
    for r in 1 2; do
      timeout 90 taskset -c 7 bash test_apps/bench/startup.sh $B --runs 201 --lib $B/lib/before/libasyncwatch.so \
        --lib $B/lib/libasyncwatch.so > $OUT/startup_core$r.txt 2>&1
      echo "== startup_core$r"; cat $OUT/startup_core$r.txt
    done
    since "startup done"
    for r in 1 2; do
      paired static_new_$r
      paired static_before_$r --lib $B/lib/before/libasyncwatch.so
    done
    paired shared_new --shared
    since "all done"
    pack_out ;;
  *) echo "usage: device_batch10.sh a" >&2; exit 2 ;;
esac
