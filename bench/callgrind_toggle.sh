#!/usr/bin/env bash
# Instructions executed inside each named wrapper per call, counted with callgrind's
# --toggle-collect on the simulator (shared runtime): collection is on while the function of that
# name runs (the simulator's function of the same name, called inside it, toggles it off again).
# An A/B measure for a change to the hot path: run it with both libraries and compare. Unlike
# callgrind_per_call.sh it does not read callgrind_annotate's tree, which splits one function into
# entries under its absolute and its relative source path on some builds (that script then stops
# with "not found"). The absolute figures are not those of callgrind_per_call.sh: the driver
# wrapper's includes the work the simulator does under other names. Two scales, the difference
# divided by the difference in call records of the trace (Launch/Copy/Sync), so one-off costs cancel.
#
# usage: callgrind_toggle.sh BUILD_DIR LIB ITEM FUNCTION...
#   e.g. callgrind_toggle.sh build build/lib/libasyncwatch.so launch __cudaLaunchKernel cuLaunchKernel
# Output: one line per function: ITEM FUNCTION ir=A B records=A B per_call=N
set -euo pipefail
die() { echo "callgrind_toggle: $*" >&2; exit 2; }
[[ $# -ge 4 ]] || die "usage: callgrind_toggle.sh BUILD_DIR LIB ITEM FUNCTION..."
command -v valgrind >/dev/null || die "valgrind not found"
build=$(cd "$1" && pwd); lib=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); item=$3; shift 3
bench=$build/test_apps/overhead_bench
sim=$build/lib/asyncwatch/sim
[[ -x $bench && -f $lib && -d $sim && -x $build/bin/asyncwatch ]] || die "need $bench, $lib, $sim and bin/asyncwatch"
work=$(mktemp -d "${TMPDIR:-/tmp}/aw-cgtoggle.XXXXXX")
trap 'rm -rf "$work"' EXIT
for v in $(compgen -e); do case $v in ASYNCWATCH_SIM_*) ;; ASYNCWATCH_*) unset "$v" ;; esac; done
unset LD_PRELOAD
for fn in "$@"; do
  ir=(); n=()
  for scale in 0.02 0.06; do
    out=$work/$fn-$scale
    mkdir -p "$out.d"
    # The stack threshold out of reach: under valgrind a call runs ~50x slower (callgrind_per_call.sh).
    env LD_LIBRARY_PATH=$sim LD_PRELOAD=$lib ASYNCWATCH_OUTPUT_DIR=$out.d ASYNCWATCH_QUIET=1 \
      ASYNCWATCH_LAUNCH_STACK_THRESHOLD_US=10000000 \
      valgrind --tool=callgrind --toggle-collect="$fn" --callgrind-out-file="$out.cg" "$bench" --only "$item" \
      --reps 1 --scale "$scale" --warmup-ms 0 >"$out.log" 2>&1 || { cat "$out.log" >&2; die "run failed"; }
    ir+=("$(awk '/^summary:/ {print $2; exit}' "$out.cg")")
    n+=("$("$build/bin/asyncwatch" dump "$out".d/*.awtrace | grep -cE ' (Launch|Copy|Sync) api=')")
  done
  python3 -c "import sys; a,b,c,d=map(int,sys.argv[1:]); print('$item $fn ir=%d %d records=%d %d per_call=%.1f' % (a,b,c,d,(b-a)/(d-c)))" \
    "${ir[0]}" "${ir[1]}" "${n[0]}" "${n[1]}"
done
