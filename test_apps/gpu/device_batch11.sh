#!/usr/bin/env bash
# The sixteenth session's H200 check (docs/validation.md, 2026-12-04), from the repository root.
#   tar -C . -cJf build-pack/build-gpu.tar.xz build-gpu   # after test_apps/gpu/stage_build.sh
#   bash test_apps/gpu/device_batch11.sh a   # carry build-pack and .corpus: the corpus of public
#       programs, the test apps, the hostile programs
#   bash test_apps/gpu/device_batch11.sh b   # carry build-pack: start-up of this library and the one
#       before (build-gpu/lib/before/) taking turns; when build-gpu/bin/ holds asyncwatch_bench,
#       asyncwatch_bench_gen and before/asyncwatch, the analyzer on a 20 M-record trace alternated
set -uo pipefail
. test_apps/gpu/batch_common.sh
tar -xJf build-pack/build-gpu.tar.xz || exit 1
case ${1:-} in
  a)
    gpu_info
    mkdir -p $OUT/corpus; OUT=$OUT/corpus timeout 185 bash test_apps/gpu/run_corpus.sh --preload $B/lib/libasyncwatch.so \
      --budget-s 170 > $OUT/corpus.log 2>&1
    tail -2 $OUT/corpus.log
    since "corpus done"
    validate_apps 170
    since "validate done"
    timeout 150 bash test_apps/gpu/run_hostile.sh --build $B --quick --out $OUT/hostile > $OUT/hostile.log 2>&1
    tail -3 $OUT/hostile.log
    since "all done"
    pack_out ;;
  b)
    gpu_info
    for r in 1 2 3; do
      timeout 90 bash test_apps/bench/startup.sh $B --runs 301 --lib $B/lib/before/libasyncwatch.so \
        --lib $B/lib/libasyncwatch.so > $OUT/startup_all$r.txt 2>&1
      echo "== startup_all$r"; cat $OUT/startup_all$r.txt
    done
    since "startup done"
    if [ -x $B/bin/asyncwatch_bench ] && [ -x $B/bin/before/asyncwatch ]; then
      analyzer_bench 560
    fi
    since "all done"
    pack_out ;;
  *) echo "usage: device_batch11.sh a|b" >&2; exit 2 ;;
esac
