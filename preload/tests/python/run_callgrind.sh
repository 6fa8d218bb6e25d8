#!/usr/bin/env bash
# Instructions per python_frames::capture() call (inclusive: pthread_getspecific and the walk), for
# a 10-deep and a 50-deep Python stack, counted by callgrind with collection on only inside capture;
# then of describe_code per code object; with NO_PYTHON_BENCH (aw_pyframes_bench_no_python) also
# in a process without Python.
# usage: run_callgrind.sh PYTHON HELPER.so [ITERATIONS [NO_PYTHON_BENCH]]
set -euo pipefail
python=$1 helper=$2 iterations=${3:-20000} no_python=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for depth in 10 50; do
  AW_BENCH_NO_CHECKED=1 valgrind --tool=callgrind --callgrind-out-file="$tmp/out.$depth" \
    --collect-atstart=no --toggle-collect='asyncwatch::python_frames::capture(*' \
    "$python" "$here/bench_walk.py" "$helper" "$iterations" "$depth" >"$tmp/log.$depth" 2>&1 ||
    { cat "$tmp/log.$depth"; exit 1; }
  total=$(sed -n 's/^summary: //p;s/^totals: //p' "$tmp/out.$depth" | head -1 | awk '{print $1}')
  calls=$((iterations + 11))  # bench_walk.py: 10 warm-up walks, and one before describing
  echo "$("$python" -c 'import sys; print(sys.version.split()[0])') depth $depth: $total instructions in $calls captures: $((total / calls)) per capture"
done
# describe_code, twice per code object (sizes, then copy): bench_walk.py's 10-deep describe round
AW_BENCH_NO_CHECKED=1 valgrind --tool=callgrind --callgrind-out-file="$tmp/out.describe" \
  --collect-atstart=no --toggle-collect='asyncwatch::python_frames::describe_code(*' \
  "$python" "$here/bench_walk.py" "$helper" "$iterations" 10 >"$tmp/log.describe" 2>&1 ||
  { cat "$tmp/log.describe"; exit 1; }
total=$(sed -n 's/^summary: //p;s/^totals: //p' "$tmp/out.describe" | head -1 | awk '{print $1}')
described=$(( (iterations / 100) * 10 ))
echo "describe_code: $total instructions for $described code objects: $((total / described)) per code object (two calls)"
if [[ -n $no_python ]]; then
  valgrind --tool=callgrind --callgrind-out-file="$tmp/out.none" --collect-atstart=no \
    --toggle-collect='asyncwatch::python_frames::capture(*' "$no_python" "$iterations" >"$tmp/log.none" 2>&1 ||
    { cat "$tmp/log.none"; exit 1; }
  total=$(sed -n 's/^summary: //p;s/^totals: //p' "$tmp/out.none" | head -1 | awk '{print $1}')
  # the first capture searched the loaded objects: counted apart
  echo "no Python: $total instructions in $((iterations + 1)) captures (the first one searches)"
fi
