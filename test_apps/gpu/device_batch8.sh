#!/usr/bin/env bash
# The twelfth session's H200 check (docs/validation.md, 2026-12-03), from the repository root.
# Two device calls, each within the carry limit:
#   bash test_apps/gpu/device_batch8.sh a   # carry build-gpu (test_apps/gpu/stage_build.sh, the
#       library before in build-gpu/lib/before/): the test apps, the hostile programs, start-up
#   bash test_apps/gpu/device_batch8.sh b   # carry build-gpu2 (bin/asyncwatch, bin/before/asyncwatch,
#       the bench tools), build-corpus and .corpus: the analyzer's speed on the host CPU, the corpus
set -uo pipefail
. test_apps/gpu/batch_common.sh
case ${1:-} in
  a)
    gpu_info
    validate_apps 200
    since "validate done"
    timeout 240 bash test_apps/gpu/run_hostile.sh --build $B --quick --out $OUT/hostile > $OUT/hostile.log 2>&1
    tail -3 $OUT/hostile.log
    since "hostile done"
    for r in 1 2 3; do startup_pair all$r; done
    since "all done"
    pack_out ;;
  b)
    B=build-gpu2
    d=$(mktemp -d)
    for round in 1 2; do
      for which in new before; do
        aw=$B/bin/asyncwatch; [ $which = before ] && aw=$B/bin/before/asyncwatch
        timeout 120 $B/bin/asyncwatch_bench --asyncwatch $aw --generator $B/bin/asyncwatch_bench_gen --dir "$d" \
          --records 20000000 --no-timeline --no-instructions > $OUT/bench_${which}_$round.txt 2>&1
        echo "== bench $which $round"; grep -i "records/s" $OUT/bench_${which}_$round.txt | head -4
      done
    done
    rm -rf "$d"
    since "bench done"
    left=$(( 560 - ($(date +%s) - t0) ))
    mkdir -p $OUT/corpus; OUT=$OUT/corpus timeout $left bash test_apps/gpu/run_corpus.sh --preload build-corpus/lib/libasyncwatch.so \
      --budget-s $(( left - 40 )) > $OUT/corpus.log 2>&1
    tail -3 $OUT/corpus.log
    since "all done"
    pack_out ;;
  *) echo "usage: device_batch8.sh a|b" >&2; exit 2 ;;
esac
