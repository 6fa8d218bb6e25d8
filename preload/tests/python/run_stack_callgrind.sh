#!/usr/bin/env bash
# Instructions per stack capture of the preload library (calls::apply_stack_policy, into which LTO
# inlines stacks::capture_call_site; inclusive: the policy's test,
# native call-site cache and, with Python frames on, the walk and the per-thread cache of stacks
# with Python frames), counted by callgrind with collection on only inside that function, for
# bench_stack_app.py's N copies at a Python depth of 10 and 30, with ASYNCWATCH_PYTHON=on and off.
# usage: run_stack_callgrind.sh ASYNCWATCH_BINARY [PYTHON [N]]   (docs/performance.md has the figures)
set -euo pipefail
aw=$1 python=${2:-python3} n=${3:-5000}
python=$("$python" -c 'import sys; print(sys.executable)')  # not a wrapper (a pyenv shim would exec it)
here=$(cd "$(dirname "$0")" && pwd)
prefix=$(cd "$(dirname "$aw")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for depth in 10 30; do
  for py in on off; do
    mkdir -p "$tmp/t.$depth.$py"
    LD_LIBRARY_PATH="$prefix/lib/asyncwatch/sim" ASYNCWATCH_OUTPUT_DIR="$tmp/t.$depth.$py" ASYNCWATCH_PYTHON=$py \
      LD_PRELOAD="$prefix/lib/libasyncwatch.so" \
      valgrind --tool=callgrind --callgrind-out-file="$tmp/out.$depth.$py" --collect-atstart=no \
      --toggle-collect='asyncwatch::calls::apply_stack_policy(*' "$python" "$here/bench_stack_app.py" "$n" "$depth" \
      >"$tmp/log.$depth.$py" 2>&1 || { cat "$tmp/log.$depth.$py"; exit 1; }
    total=$(sed -n 's/^summary: //p;s/^totals: //p' "$tmp/out.$depth.$py" | head -1 | awk '{print $1}')
    echo "$("$python" -c 'import sys; print(sys.version.split()[0])') depth $depth ASYNCWATCH_PYTHON=$py: $total instructions in $n stacks: $((total / n)) per stack"
  done
done
