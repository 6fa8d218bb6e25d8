#!/usr/bin/env bash
# The eleventh session's H200 check (docs/validation.md, 2026-12-03), from the repository root with
# build-gpu carried (test_apps/gpu/stage_build.sh, the test apps' debug information kept; the
# library of the session's start in build-gpu/lib/before/, its analyzer in build-gpu/bin/before/).
# Two device calls:
#   bash test_apps/gpu/device_batch7.sh a   # the test apps, recording on vs paused, start-up
#   bash test_apps/gpu/device_batch7.sh b   # the hostile programs, the analyzer's speed on the host CPU
# Start-up is measured twice each way: on one core (every thread's work counts: the CPU cost) and
# on the whole idle machine (the file thread runs beside the application: the latency it sees).
set -uo pipefail
paired_limit=75
. test_apps/gpu/batch_common.sh
startup_round() {  # tag taskset-cpus|all
  local lib extra pin
  for lib in new before; do
    extra=(); [ $lib = before ] && extra=(--lib $B/lib/before/libasyncwatch.so)
    pin=(taskset -c "$2"); [ "$2" = all ] && pin=()
    timeout 40 "${pin[@]}" bash test_apps/bench/startup.sh $B --runs 151 "${extra[@]}" > $OUT/startup_${1}_$lib.txt 2>&1
    echo "== startup_${1}_$lib"; tail -1 $OUT/startup_${1}_$lib.txt
  done
}
case ${1:-} in
  a)
    apps_and_paired
    for r in 1 2; do startup_round one$r 7; startup_round all$r all; done
    since "all done"
    pack_out ;;
  b)
    hostile_and_analyzer
    since "all done"
    pack_out ;;
  *) echo "usage: device_batch7.sh a|b" >&2; exit 2 ;;
esac
