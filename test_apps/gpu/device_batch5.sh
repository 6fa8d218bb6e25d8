#!/usr/bin/env bash
# The tenth session's first H200 call (docs/validation.md, 2026-12-03), from the repository root
# with build-gpu (lib/, lib/before/ = the library before this session, lib/asyncwatch/sim/,
# test_apps/startup_one_call) and .corpus/ carried: the corpus of public programs with this
# library, then start-up bare vs traced on the host CPU (this library and the one before).
#   bash test_apps/gpu/device_batch5.sh
set -uo pipefail
. test_apps/gpu/batch_common.sh
gpu_info
timeout 450 bash test_apps/gpu/run_corpus.sh --preload $B/lib/libasyncwatch.so --budget-s 400 > $OUT/corpus.log 2>&1
tail -4 $OUT/corpus.log
since "corpus done"
startup_ab 7 151 55
since "all done"
