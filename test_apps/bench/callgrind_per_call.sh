#!/usr/bin/env bash
# Instructions asyncwatch adds per call, counted with callgrind on the simulator (shared runtime):
# for each wrapper, Ir of our function (inclusive) minus Ir of the real function it calls
# (inclusive), i.e. what the wrapper itself executes; the runtime wrapper's and the nested driver
# wrapper's shares are printed separately and summed. Each item runs at two iteration counts and
# the difference is divided by the difference in calls, so one-off costs (the trace's open, the
# first segment, lazy binding) cancel out. Deterministic: no timing enters the counts.
#
# usage: callgrind_per_call.sh BUILD_DIR [--lib LIB] [--items launch,copy_pinned_64] [--env NAME=VALUE]...
#   BUILD_DIR  holds lib/libasyncwatch.so, lib/asyncwatch/sim/ and test_apps/overhead_bench
#   --lib      another build of the library (A/B of a change to the hot path)
#   --env      set for the traced program, e.g. ASYNCWATCH_DISABLE=1 (the disabled path)
# Output: one line per item: item=... runtime_wrapper_ir=... driver_wrapper_ir=... total_ir=...
set -euo pipefail
die() { echo "callgrind_per_call: $*" >&2; exit 2; }
build=""; lib=""; items="launch,copy_pinned_64"; extra_env=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --lib) lib=${2:?}; shift ;;
    --items) items=${2:?}; shift ;;
    --env) extra_env+=("${2:?}"); shift ;;
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
for item in "${list[@]}"; do
  [[ -n ${rt[$item]:-} ]] || die "unknown item $item"
  for scale in 0.02 0.06; do
    out=$work/$item-$scale
    mkdir -p "$out.d"
    env ${extra_env[@]+"${extra_env[@]}"} LD_LIBRARY_PATH=$sim LD_PRELOAD=$lib ASYNCWATCH_OUTPUT_DIR=$out.d ASYNCWATCH_QUIET=1 \
      valgrind --tool=callgrind --callgrind-out-file="$out.cg" "$bench" --only "$item" --reps 1 \
      --scale "$scale" --warmup-ms 0 >"$out.log" 2>&1 || { cat "$out.log" >&2; die "run failed"; }
    callgrind_annotate --inclusive=yes --tree=caller "$out.cg" >"$out.txt" 2>/dev/null
  done
  python3 - "$work/$item-0.02.txt" "$work/$item-0.06.txt" "$item" "${rt[$item]}" "${drv[$item]}" <<'EOF'
import os, re, sys
def parse(path, fn):
    # inclusive Ir of our fn and of the simulator's fn, and how often ours called the real one
    ours = real = calls = None
    lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
    for i, l in enumerate(lines):
        m = re.match(r"\s*([\d,]+) \([^)]*\)\s+\*\s+\S+:(\S+) \[(\S+)\]", l)
        if not m or m.group(2) != fn: continue
        ir = int(m.group(1).replace(",", ""))
        if m.group(3).endswith("libasyncwatch.so"): ours = ir
        elif "/sim/" in m.group(3):
            real = ir
            for back in lines[max(0, i - 8):i]:
                # called by our exported function or by its out-of-line body (hook_entry.h)
                c = re.search(r"<\s+\S+:(?:aw_traced_)?" + re.escape(fn) + r" \(([\d,]+)x\) \[\S*libasyncwatch", back)
                if c: calls = int(c.group(1).replace(",", ""))
    if None in (ours, real, calls): sys.exit("callgrind_per_call: %s not found in %s" % (fn, path))
    return ours - real, calls
a, b, item, rt, drv = sys.argv[1:]
res = {}
for fn in (rt, drv):
    (o1, c1), (o2, c2) = parse(a, fn), parse(b, fn)
    res[fn] = (o2 - o1) / (c2 - c1)
    if os.environ.get("AW_CG_DEBUG"): print(fn, o1, c1, o2, c2, file=sys.stderr)
print("item=%s runtime_wrapper_ir=%.0f driver_wrapper_ir=%.0f total_ir=%.0f" % (item, res[rt], res[drv], res[rt] + res[drv]))
EOF
done
