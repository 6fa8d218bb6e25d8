#!/usr/bin/env bash
# The tenth session's H200 check of the merged library (docs/validation.md, 2026-12-03), from the
# repository root with build-gpu carried (test_apps/gpu/stage_build.sh, the test apps' debug
# information kept; the library before this session in build-gpu/lib/before/, its analyzer in
# build-gpu/bin/before/). Two device calls:
#   bash test_apps/gpu/device_batch6.sh a   # the test apps, recording on vs paused, start-up
#   bash test_apps/gpu/device_batch6.sh b   # the hostile programs, the analyzer's speed on the host CPU
set -uo pipefail
paired_limit=75
. test_apps/gpu/batch_common.sh
case ${1:-} in
  a)
    apps_and_paired
    startup_ab 7 151 40
    since "all done" ;;
  b)
    hostile_and_analyzer
    since "all done" ;;
  *) echo "usage: device_batch6.sh a|b" >&2; exit 2 ;;
esac
