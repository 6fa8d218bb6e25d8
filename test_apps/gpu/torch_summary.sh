#!/usr/bin/env bash
# Summary mode on the GPU (validate_on_gpu.sh CHECK `summary`; not run by the tests): the PyTorch
# training loop of torch_capture_loop.py (random data, a DataLoader with pin_memory=False, loss.item()
# every step, torch.cuda.profiler.start()/stop() around steps 100-200) for SECONDS (default 300) under
# `asyncwatch run --summary` (the whole run: no capture range), then a short bare run and a short full
# trace of the same loop (SHORT seconds each, default 30). Run time: SECONDS + 2 x SHORT + the reports,
# about 6.5 min with the defaults. Writes to $OUT (6 files): summary.json and full.json (the reports),
# summary.out, bare.out, full.out (each run's one line: steps, step time, peak RSS) and result.txt:
# per run the trace size, peak RSS and mean step time, the summary's step time over bare's, and whether
# the summary's findings are the full trace's (rule and .py call site; counts scale with the run).
#
# usage: OUT=DIR torch_summary.sh BUILD_DIR [--seconds S] [--short S] [--python PY]
set -euo pipefail
die() { echo "torch_summary: $*" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
build=""; seconds=300; short=30; py=python3
while [[ $# -gt 0 ]]; do
  case $1 in
    --seconds) seconds=${2:?}; shift ;;
    --short) short=${2:?}; shift ;;
    --python) py=${2:?}; shift ;;
    -*) die "unknown option $1" ;;
    *) build=$1 ;;
  esac
  shift
done
[[ -n $build && -n ${OUT:-} ]] || die "usage: OUT=DIR torch_summary.sh BUILD_DIR [--seconds S] [--short S] [--python PY]"
build=$(cd "$build" && pwd)
aw=$build/bin/asyncwatch
loop=$here/torch_capture_loop.py
mkdir -p "$OUT"
for v in $(compgen -e); do case $v in ASYNCWATCH_*) unset "$v" ;; esac; done
work=$(mktemp -d "${TMPDIR:-/tmp}/aw-torch-summary.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Trace sizes are taken before the traces are removed with $work (only the reports come back).
"$aw" run --summary --format json --report-output "$OUT/summary.json" -o "$work/summary" -- \
  "$py" "$loop" --seconds "$seconds" --range 100:200 > "$OUT/summary.out" 2> "$work/summary.err" || true
"$py" "$loop" --seconds "$short" --range 100:200 > "$OUT/bare.out" 2> "$work/bare.err" || true
"$aw" run --format json --report-output "$OUT/full.json" -o "$work/full" -- \
  "$py" "$loop" --seconds "$short" --range 100:200 > "$OUT/full.out" 2> "$work/full.err" || true
du -cb "$work"/summary/*.awtrace 2>/dev/null | tail -1 | cut -f1 > "$work/summary.size" || echo 0 > "$work/summary.size"
du -cb "$work"/full/*.awtrace 2>/dev/null | tail -1 | cut -f1 > "$work/full.size" || echo 0 > "$work/full.size"
tail -3 "$work"/*.err > "$work/errs" 2>/dev/null || true

"$py" - "$OUT" "$work" <<'PY' | tee "$OUT/result.txt"
import json, os, sys
out, work = sys.argv[1], sys.argv[2]
def fields(name):
    try:
        last = open(os.path.join(out, name + ".out")).read().strip().splitlines()[-1]
        return dict(kv.split("=", 1) for kv in last.split())
    except (OSError, IndexError, ValueError):
        return {}
def size(name):
    try:
        return int(open(os.path.join(work, name + ".size")).read().strip() or 0)
    except (OSError, ValueError):
        return 0
def report(name):
    try:
        return json.load(open(os.path.join(out, name + ".json")))
    except (OSError, ValueError):
        return None
runs = {n: fields(n) for n in ("bare", "summary", "full")}
for n, f in runs.items():
    trace = "" if n == "bare" else f" trace_mib={size(n) / 1048576:.2f}"
    print(f"{n}: steps={f.get('steps', '?')} seconds={f.get('seconds', '?')} step_us_mean={f.get('step_us_mean', '?')} "
          f"vmhwm_mib={int(f.get('vmhwm_kib', 0)) / 1024:.1f}{trace}")
try:
    print(f"summary step time / bare: {float(runs['summary']['step_us_mean']) / float(runs['bare']['step_us_mean']):.3f}")
    print(f"full step time / bare:    {float(runs['full']['step_us_mean']) / float(runs['bare']['step_us_mean']):.3f}")
except (KeyError, ValueError, ZeroDivisionError):
    print("step times: missing (see the .out files)")
def sites(rep):
    if rep is None:
        return None
    return sorted({(f["id"], (f.get("call_site") or {}).get("file"), (f.get("call_site") or {}).get("line"))
                   for f in rep["findings"]}, key=str)
s, f = report("summary"), report("full")
print("summary note:", any(n.startswith("summary trace") for p in (s or {}).get("processes", []) for n in p.get("notes", [])))
print("summary findings:", sites(s))
print("full findings:   ", sites(f))
print("same findings and .py call sites:", sites(s) is not None and sites(s) == sites(f))
PY
echo "--- stderr tails"; cat "$work/errs"
