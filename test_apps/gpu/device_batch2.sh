#!/usr/bin/env bash
# One device call of a session's H200 check (docs/validation.md), from the repository root with
# build-gpu carried (test_apps/gpu/stage_build.sh, plus build/test_apps/bench_clock_cost): fits one
# 600 s call; results under $OUT (at most two folders down).
set -uo pipefail
B=build-gpu
t0=$(date +%s)
ASYNCWATCH_CLOCK=monotonic timeout 100 bash test_apps/bench/run_paired.sh $B --procs 6 --reps 20 --cpu 2-5 --items launch,copy_pinned_64,event_record_query > $OUT/paired_monotonic.txt 2>&1; tail -4 $OUT/paired_monotonic.txt
timeout 100 bash test_apps/bench/run_paired.sh $B --procs 6 --reps 20 --cpu 2-5 --items launch,copy_pinned_64,event_record_query > $OUT/paired2.txt 2>&1; tail -4 $OUT/paired2.txt
mkdir -p $OUT/val && OUT=$OUT/val timeout 440 bash test_apps/gpu/validate.sh $B --budget-s 330 > $OUT/validate.log 2>&1; tail -4 $OUT/validate.log
echo "validate done at $(( $(date +%s) - t0 )) s"
left=$(( 570 - ($(date +%s) - t0) ))
[ $left -gt 40 ] && timeout $left bash test_apps/gpu/run_hostile.sh --build $B --quick --out $OUT/hostile > $OUT/hostile.log 2>&1; tail -3 $OUT/hostile.log
echo "all done at $(( $(date +%s) - t0 )) s"
