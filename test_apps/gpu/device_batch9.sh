#!/usr/bin/env bash
# The thirteenth session's H200 check (docs/validation.md, 2026-12-03), from the repository root.
# Two device calls; the staged build travels as one archive (build-pack/build-gpu.tar.xz: the test
# apps' debug information compresses well, and the uncompressed build-gpu no longer fits the carry
# limit beside the tree):
#   tar -C . -cJf build-pack/build-gpu.tar.xz build-gpu   # after test_apps/gpu/stage_build.sh
#   bash test_apps/gpu/device_batch9.sh a   # carry build-pack: the test apps, the hostile
#       programs, start-up of this library and the one before (build-gpu/lib/before/)
#   bash test_apps/gpu/device_batch9.sh b   # carry build-corpus and .corpus: the corpus
#   bash test_apps/gpu/device_batch9.sh c   # carry build-gpu4: launch_forms (shared and static), start-up
set -uo pipefail
. test_apps/gpu/batch_common.sh
case ${1:-} in
  a)
    tar -xJf build-pack/build-gpu.tar.xz || exit 1
    gpu_info
    for r in 1 2 3; do startup_pair all$r; done
    since "startup done"
    validate_apps 170
    since "validate done"
    timeout 200 bash test_apps/gpu/run_hostile.sh --build $B --quick --out $OUT/hostile > $OUT/hostile.log 2>&1
    tail -3 $OUT/hostile.log
    since "all done"
    pack_out ;;
  b)
    mkdir -p $OUT/corpus; OUT=$OUT/corpus timeout 540 bash test_apps/gpu/run_corpus.sh --preload build-corpus/lib/libasyncwatch.so \
      --budget-s 500 > $OUT/corpus.log 2>&1
    tail -3 $OUT/corpus.log
    since "all done"
    pack_out ;;
  c)  # carry build-gpu4 (stage_build.sh, then only launch_forms[.static] and startup_one_call kept)
    B=build-gpu4
    gpu_info
    OUT=$OUT bash test_apps/gpu/validate.sh $B --cases launch_forms --no-python --budget-s 60 > $OUT/validate.log 2>&1
    tail -4 $OUT/validate.log
    for r in 1 2 3; do startup_pair all$r; done
    since "all done"
    pack_out ;;
  *) echo "usage: device_batch9.sh a|b|c" >&2; exit 2 ;;
esac
