#!/usr/bin/env bash
# The fifteenth session's H200 check (docs/validation.md, 2026-12-04), from the repository root.
# Stage a small build first (it fits the carry limit as it is):
#   build-gpu10/lib/libasyncwatch.so (this library), build-gpu10/lib/before/libasyncwatch.so (the
#   one before, 2d3b076), build-gpu10/lib/asyncwatch/sim/, build-gpu10/test_apps/{startup_one_call,
#   overhead_bench,overhead_bench.static}; strip -g the two libraries.
#   bash test_apps/gpu/device_batch10.sh a   # carry build-gpu10: start-up of both libraries taking
#       turns run by run (startup.sh with two --lib), on the whole machine and on one core, then
#       recording on vs paused for both (static runtime) and this one (shared runtime)
#   bash test_apps/gpu/device_batch10.sh b   # carry build-gpu10 again, restaged with the library of
#       the wrappers' fill inlined: recording on vs paused for it and the one before (static, three
#       rounds each, alternated), shared; start-up once more; and, when build-gpu10/bin/ holds
#       asyncwatch, asyncwatch_bench, asyncwatch_bench_gen and bin/before/asyncwatch, the analyzer
#       on a 20 M-record trace, this one and the one before alternated
#   bash test_apps/gpu/device_batch10.sh c   # carry build-pack: the test apps and the hostile programs
set -uo pipefail
. test_apps/gpu/batch_common.sh
case ${1:-} in
  a)
    B=build-gpu10
    gpu_info
    startup_turns 3 301
    for r in 1 2; do
      timeout 90 taskset -c 7 bash test_apps/bench/startup.sh $B --runs 201 --lib $B/lib/before/libasyncwatch.so \
        --lib $B/lib/libasyncwatch.so > $OUT/startup_core$r.txt 2>&1
      echo "== startup_core$r"; cat $OUT/startup_core$r.txt
    done
    since "startup done"
    paired_ab 2
    paired shared_new --shared
    since "all done"
    pack_out ;;
  b)
    B=build-gpu10
    gpu_info
    paired_ab 3
    paired shared_new --shared
    since "paired done"
    startup_turns 1 301 4
    if [ -x $B/bin/asyncwatch_bench ] && [ -x $B/bin/before/asyncwatch ]; then
      analyzer_bench 560
    fi
    since "all done"
    pack_out ;;
  c)  # carry build-pack (tar -C . -cJf build-pack/build-gpu.tar.xz build-gpu, after stage_build.sh)
    tar -xJf build-pack/build-gpu.tar.xz || exit 1
    gpu_info
    validate_apps 200
    since "validate done"
    hostile 150
    pack_out ;;
  *) echo "usage: device_batch10.sh a|b|c" >&2; exit 2 ;;
esac
