#!/usr/bin/env bash
# The ninth session's H200 check (docs/validation.md, 2026-12-03), in two device calls, from the
# repository root with build-gpu carried (test_apps/gpu/stage_build.sh; the library before this
# session in build-gpu/lib/before/):
#   bash test_apps/gpu/device_batch4.sh 1   # the test apps (validate.sh), then the Python line
#   bash test_apps/gpu/device_batch4.sh 2   # paired overhead and start-up, new vs before; hostile
set -uo pipefail
B=build-gpu
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
cat /sys/devices/system/clocksource/clocksource0/current_clocksource >> $OUT/gpu.txt
case ${1:?which call} in
1)
  OUT=$OUT bash test_apps/gpu/validate.sh $B --budget-s 290 > $OUT/validate.log 2>&1; tail -4 $OUT/validate.log
  echo "validate done at $(( $(date +%s) - t0 )) s"
  left=$(( 580 - ($(date +%s) - t0) ))
  mkdir -p $OUT/py && OUT=$OUT/py timeout $left bash test_apps/gpu/python_line.sh $B > $OUT/python_line.log 2>&1
  tail -5 $OUT/python_line.log
  ;;
2)
  paired() {  # name args...
    local name=$1; shift
    timeout 90 bash test_apps/bench/run_paired.sh $B --procs 6 --reps 20 --cpu 2-5 --items launch,copy_pinned_64,event_record_query "$@" > $OUT/$name.txt 2>&1
    echo "== $name"; tail -3 $OUT/$name.txt
  }
  paired static_new
  paired static_before --lib $B/lib/before/libasyncwatch.so
  paired shared_new --shared
  paired shared_before --shared --lib $B/lib/before/libasyncwatch.so
  echo "paired done at $(( $(date +%s) - t0 )) s"
  for lib in new before; do  # start-up on the host CPU: bare vs traced, this library and the one before
    extra=(); [ $lib = before ] && extra=(--lib $B/lib/before/libasyncwatch.so)
    timeout 60 taskset -c 7 bash test_apps/bench/startup.sh $B --runs 201 "${extra[@]}" > $OUT/startup_$lib.txt 2>&1
    echo "== startup_$lib"; tail -4 $OUT/startup_$lib.txt
  done
  left=$(( 570 - ($(date +%s) - t0) ))
  [ $left -gt 40 ] && timeout $left bash test_apps/gpu/run_hostile.sh --build $B --quick --out $OUT/hostile > $OUT/hostile.log 2>&1
  tail -3 $OUT/hostile.log
  ;;
esac
echo "all done at $(( $(date +%s) - t0 )) s"
