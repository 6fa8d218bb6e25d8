#!/usr/bin/env bash
# GPU validation of asyncwatch's test apps: run on the H200 test machine from the repository root,
# with the build directory carried over from the development machine (apps, libasyncwatch.so and,
# if its libraries are there, the asyncwatch command):
#
#   bash test_apps/gpu/validate.sh [BUILD_DIR=build] [validate.py options...]
#
# Results: $OUT/validate.tar.gz (runs/<case>.<linkage>/{bare.*,stdout,stderr,rc,traces/,report.json},
# python/, info.txt, manifest.json, summary.txt) and $OUT/summary.txt; the table is also printed.
# Back here: tar xzf validate.tar.gz && python3 test_apps/apps/check_app.py results validate --build build
# Finishes in well under 8 minutes (new runs stop being started after --budget-s, default 330 s).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-${AW_BUILD:-$root/build}}
[ $# -gt 0 ] && shift
export PYTHONUNBUFFERED=1
exec timeout -k 10 460 python3 "$root/test_apps/gpu/validate.py" --build "$build" --out "${OUT:-$root/validate-out}" --budget-s 330 "$@"
