#!/usr/bin/env bash
# The tenth session's H200 check of the merged library (docs/validation.md, 2026-12-03), from the
# repository root with build-gpu carried (test_apps/gpu/stage_build.sh, the test apps' debug
# information kept; the library before this session in build-gpu/lib/before/, its analyzer in
# build-gpu/bin/before/). Two device calls:
#   bash test_apps/gpu/device_batch6.sh a   # the test apps, recording on vs paused, start-up
#   bash test_apps/gpu/device_batch6.sh b   # the hostile programs, the analyzer's speed on the host CPU
set -uo pipefail
B=build-gpu
t0=$(date +%s)
since() { echo "$1 at $(( $(date +%s) - t0 )) s"; }
paired_limit=75
. test_apps/gpu/batch_common.sh
case ${1:-} in
  a)
    apps_and_paired
    startup_ab 7 151 40
    since "all done" ;;
  b)
    timeout 300 bash test_apps/gpu/run_hostile.sh --build $B --quick --out $OUT/hostile > $OUT/hostile.log 2>&1
    tail -3 $OUT/hostile.log
    since "hostile done"
    # The analyzer on the idle host CPU: one generated 20 M-record trace, this analyzer and the one
    # before alternated (the bench pins itself to one core and prints records/s of CPU time).
    d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
    for round in 1 2; do
      for which in new before; do
        aw=$B/bin/asyncwatch; [ $which = before ] && aw=$B/bin/before/asyncwatch
        left=$(( 570 - ($(date +%s) - t0) )); [ $left -lt 30 ] && break 2
        timeout $left $B/bin/asyncwatch_bench --asyncwatch $aw --generator $B/bin/asyncwatch_bench_gen --dir "$d" \
          --records 20000000 --no-timeline --no-instructions > $OUT/bench_${which}_$round.txt 2>&1
        echo "== bench $which $round"; grep -i "records/s" $OUT/bench_${which}_$round.txt | head -4
      done
    done
    since "all done" ;;
  *) echo "usage: device_batch6.sh a|b" >&2; exit 2 ;;
esac
