#!/usr/bin/env bash
# NVTX ranges on a GPU: from PyTorch (torch.cuda.nvtx) and from the nvtx_ranges test app (the
# toolkit's nvtx3 headers), each traced, reported and checked (`validate_on_gpu.sh nvtx` runs it).
# From the repository root, with a build staged by stage_build.sh (bin/asyncwatch, lib/, test_apps/nvtx_ranges[.static]):
#
#   bash test_apps/gpu/nvtx_torch.sh [BUILD_DIR=build-gpu]      (PYTHON=/opt/torch/.venv/bin/python3)
#
# Results: $OUT/nvtx.tar.gz (stdout, stderr, rc, traces/, report.{txt,json} per part) and
# $OUT/summary.txt with PASS/FAIL per check. Wall time: well under a minute.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build-gpu}" && pwd)
py=${PYTHON:-/opt/torch/.venv/bin/python3}
out=${OUT:-$root/nvtx-out}
work=$(mktemp -d)
res=$work/nvtx
mkdir -p "$out" "$res"
lib=$build/lib/libasyncwatch.so
aw=$build/bin/asyncwatch
summary=$res/summary.txt
: >"$summary"

# run NAME -- COMMAND...: traced run, then the text and JSON reports of its traces.
run() {
  local name=$1
  shift 2
  mkdir -p "$res/$name.traces"
  env PYTHONUNBUFFERED=1 LD_PRELOAD="$lib" ASYNCWATCH_OUTPUT_DIR="$res/$name.traces" timeout -k 5 120 "$@" \
    >"$res/$name.stdout" 2>"$res/$name.stderr"
  echo $? >"$res/$name.rc"
  "$aw" report "$res/$name.traces" >"$res/$name.report.txt" 2>&1
  "$aw" report --format json "$res/$name.traces" >"$res/$name.report.json" 2>>"$res/$name.report.txt"
  echo "$name: rc $(cat "$res/$name.rc")" | tee -a "$summary"
}

# check NAME MARKER EXPECTED_RANGES_JSON: the findings whose call site line holds MARKER (in the
# script or source) have exactly these ranges ({name: calls}).
check() {
  python3 - "$res/$1.report.json" "$2" "$3" "$root" <<'PY' | tee -a "$summary"
import json, os, sys, linecache
marker, want, root = sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]


def source(path):
    # The apps' debug info names the source where they were built (another checkout): the same
    # file in this tree is the part from "test_apps/" on.
    if os.path.exists(path) or "/test_apps/" not in path:
        return path
    return os.path.join(root, path[path.rindex("/test_apps/") + 1:])


try:
    rep = json.load(open(sys.argv[1]))
except ValueError:
    print(f"FAIL {marker}: no JSON report ({sys.argv[1]})")
    sys.exit(0)
got, n = {}, 0
for f in rep["findings"]:
    cs = f.get("call_site") or {}
    if cs.get("file") and marker in linecache.getline(source(cs["file"]), cs.get("line") or 0):
        n += 1
        for r in f.get("ranges", []):
            got[r["name"]] = got.get(r["name"], 0) + r["calls"]
status = "PASS" if n and got == want else "FAIL"
print(f"{status} {marker}: {n} finding(s), ranges {got}, expected {want}")
PY
}

run torch -- "$py" "$root/test_apps/gpu/nvtx_torch.py"
check torch RANGED_CPU '{"train_step": 8}'
check torch UNRANGED_CPU '{}'
for app in nvtx_ranges nvtx_ranges.static; do
  [ -x "$build/test_apps/$app" ] || { echo "$app: not in the build" | tee -a "$summary"; continue; }
  run "$app" -- "$build/test_apps/$app" 20 2e5
  check "$app" @RANGED_COPY '{"optimizer_step": 18, "epoch": 20}'
  check "$app" @UNRANGED_COPY '{}'
done
grep -h "NVTX_INJECTION64_PATH\|NVTX injected" "$res"/*.stderr | head -5 >>"$summary"
tar czf "$out/nvtx.tar.gz" -C "$work" nvtx
cp "$summary" "$out/summary.txt"
cat "$summary"
rm -rf "$work"
