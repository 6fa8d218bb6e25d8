#!/usr/bin/env bash
# The ninth session's H200 check (docs/validation.md, 2026-12-03), one device call, from the
# repository root with build-gpu carried (test_apps/gpu/stage_build.sh with the test apps' debug
# information kept: the call sites need it; the library before this session in
# build-gpu/lib/before/): the test apps, recording on vs paused (this library and the one before,
# static and shared runtime), start-up on the host CPU, then the hostile programs in what is left.
#   bash test_apps/gpu/device_batch4.sh
# (The Python line ran in an earlier call: bash test_apps/gpu/python_line.sh build-gpu.)
set -uo pipefail
paired_limit=75
. test_apps/gpu/batch_common.sh
apps_and_paired
startup_ab 7 201 50
left=$(( 575 - ($(date +%s) - t0) ))
[ $left -gt 40 ] && timeout $left bash test_apps/gpu/run_hostile.sh --build $B --quick --out $OUT/hostile > $OUT/hostile.log 2>&1
tail -3 $OUT/hostile.log
since "all done"
