#!/usr/bin/env bash
# The sixteenth session's H200 check (docs/validation.md, 2026-12-04), from the repository root.
#   tar -C . -cJf build-pack/build-gpu.tar.xz build-gpu   # after test_apps/gpu/stage_build.sh
#   bash test_apps/gpu/device_batch11.sh a   # carry build-pack and .corpus: the corpus of public
#       programs, the test apps, the hostile programs
#   bash test_apps/gpu/device_batch11.sh b   # carry build-pack: start-up of this library and the one
#       before (build-gpu/lib/before/) taking turns, then recording on vs paused for both (static
#       runtime, two rounds each, alternated) and this one (shared)
#   bash test_apps/gpu/device_batch11.sh c   # carry build-pack: when build-gpu/bin/ holds asyncwatch_bench,
#       asyncwatch_bench_gen and before/asyncwatch, the analyzer on a 20 M-record trace alternated
set -uo pipefail
. test_apps/gpu/batch_common.sh
tar -xJf build-pack/build-gpu.tar.xz || exit 1
case ${1:-} in
  a)
    gpu_info
    corpus 170
    validate_apps 170
    since "validate done"
    hostile 150
    pack_out ;;
  b)
    gpu_info
    startup_turns 3 301
    paired_ab 2
    paired shared_new --shared
    since "all done"
    pack_out ;;
  c)
    gpu_info
    [ -x $B/bin/asyncwatch_bench ] && [ -x $B/bin/before/asyncwatch ] && analyzer_bench 540
    since "all done"
    pack_out ;;
  *) echo "usage: device_batch11.sh a|b|c" >&2; exit 2 ;;
esac
