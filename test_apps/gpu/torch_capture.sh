#!/usr/bin/env bash
# Capture ranges on the GPU (not run by the tests): a PyTorch training loop of SECONDS
# (default 300) with torch.cuda.profiler.start()/stop() around steps 100-200, bare and under
# `asyncwatch run --capture-range cudaProfilerApi`, and a full trace of a short run (20 s) of the same
# loop for reference. Writes to $OUT: each run's output, the reports (text and JSON), and
# summary.txt: step time, peak RSS and trace size of each run, and whether the capture's findings
# (id and .py call site) are those of the full trace.
#
# usage: OUT=DIR torch_capture.sh BUILD_DIR [--seconds S] [--python PY]
set -euo pipefail
die() { echo "torch_capture: $*" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
build=""; seconds=300; py=python3
while [[ $# -gt 0 ]]; do
  case $1 in
    --seconds) seconds=${2:?}; shift ;;
    --python) py=${2:?}; shift ;;
    -*) die "unknown option $1" ;;
    *) build=$1 ;;
  esac
  shift
done
[[ -n $build && -n ${OUT:-} ]] || die "usage: OUT=DIR torch_capture.sh BUILD_DIR [--seconds S] [--python PY]"
build=$(cd "$build" && pwd)
aw=$build/bin/asyncwatch
loop=$here/torch_capture_loop.py
mkdir -p "$OUT"
for v in $(compgen -e); do case $v in ASYNCWATCH_*) unset "$v" ;; esac; done

"$py" "$loop" --seconds "$seconds" --range 100:200 > "$OUT/bare.out" 2> "$OUT/bare.err"
"$aw" run --capture-range cudaProfilerApi --format json --report-output "$OUT/capture.json" -o "$OUT/capture" -- \
  "$py" "$loop" --seconds "$seconds" --range 100:200 > "$OUT/capture.out" 2> "$OUT/capture.err" || true
"$aw" report "$OUT/capture" > "$OUT/capture.txt" 2>&1 || true
"$aw" run --format json --report-output "$OUT/full.json" -o "$OUT/full" -- \
  "$py" "$loop" --seconds 20 > "$OUT/full.out" 2> "$OUT/full.err" || true
"$aw" report "$OUT/full" > "$OUT/full.txt" 2>&1 || true

"$py" - "$OUT" <<'PY' | tee "$OUT/summary.txt"
import glob, json, os, sys
out = sys.argv[1]
def line(name):
    try:
        return open(os.path.join(out, name + ".out")).read().strip().splitlines()[-1]
    except (OSError, IndexError):
        return "(no output)"
def size(d):
    return sum(os.path.getsize(p) for p in glob.glob(os.path.join(out, d, "*.awtrace")))
def sites(name):
    try:
        rep = json.load(open(os.path.join(out, name + ".json")))
    except (OSError, ValueError):
        return None
    return sorted({(f["id"], f["call_site"].get("file"), f["call_site"].get("line")) for f in rep["findings"]},
                  key=str)
for name in ("bare", "capture", "full"):
    extra = "" if name == "bare" else f" trace_bytes={size(name)}"
    print(f"{name}: {line(name)}{extra}")
c, f = sites("capture"), sites("full")
print("capture findings:", c)
print("full findings:   ", f)
print("same findings and call sites:", c == f)
PY
