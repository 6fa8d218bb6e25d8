#!/usr/bin/env bash
# Instructions asyncwatch adds per call, counted with callgrind on the simulator (shared runtime):
# what our runtime and driver wrappers execute (their out-of-line bodies and the library functions
# they call included) outside the real functions, collected with --toggle-collect; the runtime
# wrapper's and the nested driver wrapper's shares are printed separately and summed. (Not
# inclusive costs: callgrind attributes the tail calls of the exported wrappers to their callers.) Each item runs at two iteration counts and
# the difference is divided by the difference in calls, so one-off costs (the trace's open, the
# first segment, lazy binding) cancel out. Deterministic: no timing enters the counts (the stack
# threshold is set out of reach, ASYNCWATCH_LAUNCH_STACK_THRESHOLD_US=10000000: on a busy machine
# some calls of the simulator blocked longer than the default 1 ms and took a stack, which moved the
# counts by up to 38 instructions a call).
#
# usage: callgrind_per_call.sh BUILD_DIR [--lib LIB] [--items launch,copy_pinned_64] [--env NAME=VALUE]...
#                              [--driver]
#   BUILD_DIR  holds lib/libasyncwatch.so, lib/asyncwatch/sim/ and test_apps/overhead_bench
#   --lib      another build of the library (A/B of a change to the hot path)
#   --env      set for the traced program, e.g. ASYNCWATCH_DISABLE=1 (the disabled path)
#   --driver   the driver API called directly instead (test_apps/driver_bench: the static
#              runtime's way in, each call through the outer driver wrapper); items launch and
#              copy_pinned_64
# Output: one line per item: item=... runtime_wrapper_ir=... driver_wrapper_ir=... total_ir=...
# (--driver: item=... path=driver driver_wrapper_ir=...)
set -euo pipefail
die() { echo "callgrind_per_call: $*" >&2; exit 2; }
build=""; lib=""; items="launch,copy_pinned_64"; extra_env=(ASYNCWATCH_LAUNCH_STACK_THRESHOLD_US=10000000); driver=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --lib) lib=${2:?}; shift ;;
    --items) items=${2:?}; shift ;;
    --env) extra_env+=("${2:?}"); shift ;;
    --driver) driver=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1" ;;
    *) build=$1 ;;
  esac
  shift
done
[[ -n $build ]] || die "usage: callgrind_per_call.sh BUILD_DIR [--lib LIB] [--items LIST]"
command -v valgrind >/dev/null || die "valgrind not found"
build=$(cd "$build" && pwd)
lib=${lib:-$build/lib/libasyncwatch.so}
lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
bench=$build/test_apps/overhead_bench
sim=$build/lib/asyncwatch/sim
[[ -x $bench && -f $lib && -d $sim ]] || die "need $bench, $lib and $sim"
work=$(mktemp -d "${TMPDIR:-/tmp}/aw-callgrind.XXXXXX")
trap 'rm -rf "$work"' EXIT
for v in $(compgen -e); do case $v in ASYNCWATCH_*) unset "$v" ;; esac; done
unset LD_PRELOAD

# item -> runtime entry point, driver entry point it reaches
declare -A rt=([launch]=__cudaLaunchKernel [copy_pinned_64]=cudaMemcpyAsync [copy_pageable_64]=cudaMemcpyAsync [event_record_query]=cudaEventQuery
               [sync_idle]=cudaStreamSynchronize [host_func]=cudaLaunchHostFunc)
declare -A drv=([launch]=cuLaunchKernel [copy_pinned_64]=cuMemcpyHtoDAsync_v2 [copy_pageable_64]=cuMemcpyHtoDAsync_v2 [event_record_query]=cuEventQuery
                [sync_idle]=cuStreamSynchronize [host_func]=cuLaunchHostFunc)
IFS=, read -r -a list <<<"$items"
if [[ -n $driver ]]; then  # the driver wrapper as the outer wrapper: the call counts are known
  [[ -x $build/test_apps/driver_bench ]] || die "need $build/test_apps/driver_bench"
  for item in "${list[@]}"; do
    [[ $item == launch || $item == copy_pinned_64 ]] || die "--driver: no item $item (launch, copy_pinned_64)"
    t=()
    for calls in 2000 12000; do
      mkdir -p "$work/$item-$calls.d"
      env ${extra_env[@]+"${extra_env[@]}"} LD_LIBRARY_PATH=$sim LD_PRELOAD=$lib ASYNCWATCH_OUTPUT_DIR=$work/$item-$calls.d \
        ASYNCWATCH_QUIET=1 valgrind --tool=callgrind --toggle-collect="${drv[$item]}" \
        --callgrind-out-file="$work/$item-$calls.cg" "$build/test_apps/driver_bench" "$item" $calls \
        >"$work/$item.log" 2>&1 || { cat "$work/$item.log" >&2; die "run failed"; }
      t+=("$(awk '/^totals:/ {print $2}' "$work/$item-$calls.cg")")
    done
    echo "item=$item path=driver driver_wrapper_ir=$(( (t[1] - t[0]) / 10000 ))"
  done
  exit 0
fi
# One run per scale and per set of names: callgrind collects only inside a function of the set, and
# every nested entry into one toggles collection again. Our wrapper and the real function share the
# name, so what is collected is what our wrappers execute around the real functions: their
# out-of-line bodies and the library functions they call (clock reads, our driver queries) included,
# the real functions excluded.
run_one() {  # item scale tag function...
  local item=$1 scale=$2 out=$work/$1-$2-$3 f
  shift 3
  local toggles=()
  for f in "$@"; do toggles+=("--toggle-collect=$f"); done
  mkdir -p "$out.d"
  env ${extra_env[@]+"${extra_env[@]}"} LD_LIBRARY_PATH=$sim LD_PRELOAD=$lib ASYNCWATCH_OUTPUT_DIR=$out.d ASYNCWATCH_QUIET=1 \
    valgrind --tool=callgrind "${toggles[@]}" --callgrind-out-file="$out.cg" "$bench" --only "$item" --reps 1 \
    --scale "$scale" --warmup-ms 0 >"$out.log" 2>&1 || { cat "$out.log" >&2; die "run failed"; }
  callgrind_annotate --inclusive=yes --tree=caller "$out.cg" >"$out.txt" 2>/dev/null
}
for item in "${list[@]}"; do
  [[ -n ${rt[$item]:-} ]] || die "unknown item $item"
  for scale in 0.02 0.06; do
    run_one "$item" $scale both "${rt[$item]}" "${drv[$item]}"
    run_one "$item" $scale driver "${drv[$item]}"
  done
  python3 - "$work/$item" "$item" "${rt[$item]}" <<'EOF'
import re, sys
def parse(path, rt):
    # the collected Ir (totals line) and how often the runtime entry point was called
    text = open(path + ".txt", encoding="utf-8", errors="replace").read()
    total = None
    for l in open(path + ".cg", encoding="utf-8", errors="replace"):
        if l.startswith("totals:"): total = int(l.split()[1])
    calls = [int(c.replace(",", "")) for c in re.findall(r":(?:aw_traced_)?" + re.escape(rt) + r" \(([\d,]+)x\)", text)]
    if total is None or not calls: sys.exit("callgrind_per_call: %s not found in %s" % (rt, path))
    return total, max(calls)
base, item, rt = sys.argv[1:]
per = {}
for tag in ("both", "driver"):
    (t1, c1), (t2, c2) = parse(base + "-0.02-" + tag, rt), parse(base + "-0.06-" + tag, rt)
    per[tag] = (t2 - t1) / (c2 - c1)
print("item=%s runtime_wrapper_ir=%.0f driver_wrapper_ir=%.0f total_ir=%.0f"
      % (item, per["both"] - per["driver"], per["driver"], per["both"]))
EOF
done
