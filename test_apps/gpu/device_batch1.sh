#!/usr/bin/env bash
# One device call of a session's H200 check (docs/validation.md), from the repository root with
# build-gpu carried (test_apps/gpu/stage_build.sh, plus build/test_apps/bench_clock_cost): fits one
# 600 s call; results under $OUT (at most two folders down).
set -uo pipefail
B=build-gpu
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cat /sys/devices/system/clocksource/clocksource0/current_clocksource >> $OUT/gpu.txt
$B/test_apps/bench_clock_cost > $OUT/clock_cost.txt 2>&1; cat $OUT/clock_cost.txt
mkdir -p $OUT/py && OUT=$OUT/py timeout 260 bash test_apps/gpu/python_line.sh $B > $OUT/python_line.log 2>&1; tail -5 $OUT/python_line.log
echo "python_line done at $(( $(date +%s) - t0 )) s"
timeout 150 bash test_apps/bench/run_paired.sh $B --procs 6 --reps 20 --cpu 2-5 --items launch,copy_pinned_64,event_record_query > $OUT/paired.txt 2>&1; tail -6 $OUT/paired.txt
echo "paired done at $(( $(date +%s) - t0 )) s"
echo "all done at $(( $(date +%s) - t0 )) s"
