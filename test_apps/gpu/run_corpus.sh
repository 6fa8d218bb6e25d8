#!/usr/bin/env bash
# The call-site corpus on the GPU machine (test_apps/corpus/README.md): run from the repository
# root with .corpus/corpus.tar.xz (made by test_apps/corpus/build_corpus.py) and the
# preload library (build-gpu/lib/libasyncwatch.so, from test_apps/gpu/stage_build.sh) carried:
#
#   bash test_apps/gpu/run_corpus.sh [run_corpus.py options...]
#
# Results: $OUT/corpus-results.tar.gz and $OUT/summary.txt. It runs binaries only, never builds.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
export PYTHONUNBUFFERED=1
exec timeout -k 10 570 python3 "$root/test_apps/gpu/run_corpus.py" --out "${OUT:-$root/corpus-out}" "$@"
