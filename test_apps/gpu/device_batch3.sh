#!/usr/bin/env bash
# One device call of the seventh session's H200 check (docs/validation.md): the library of this
# session against the one before it (build-gpu/lib/before/libasyncwatch.so), recording on vs paused
# in one lease, static runtime (the driver wrapper outermost) and shared runtime (the runtime
# wrapper over the driver wrapper's short body), then the Python line and the hostile programs.
# From the repository root with build-gpu carried (test_apps/gpu/stage_build.sh); fits one 600 s call.
set -uo pipefail
B=build-gpu
t0=$(date +%s)
. test_apps/gpu/batch_common.sh
gpu_info
paired static_new
paired static_before --lib $B/lib/before/libasyncwatch.so
paired shared_new --shared
paired shared_before --shared --lib $B/lib/before/libasyncwatch.so
echo "paired done at $(( $(date +%s) - t0 )) s"
mkdir -p $OUT/py && OUT=$OUT/py timeout 200 bash test_apps/gpu/python_line.sh $B > $OUT/python_line.log 2>&1; tail -5 $OUT/python_line.log
echo "python_line done at $(( $(date +%s) - t0 )) s"
left=$(( 570 - ($(date +%s) - t0) ))
[ $left -gt 40 ] && timeout $left bash test_apps/gpu/run_hostile.sh --build $B --quick --out $OUT/hostile > $OUT/hostile.log 2>&1; tail -3 $OUT/hostile.log
echo "all done at $(( $(date +%s) - t0 )) s"
