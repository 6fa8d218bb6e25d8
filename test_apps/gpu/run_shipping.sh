#!/usr/bin/env bash
# The shipped packages on a GPU box that has python3 + torch and no network (the H200), with nothing
# carried but the wheel and the tarball that `bash .ci/package` wrote to build-dist/:
#   1. the wheel into the machine's own Python (pip --no-index --no-deps --target DIR), then
#      `asyncwatch run -- python3 test_apps/gpu/torch_copies.py` (the console script) and
#      `python3 -m asyncwatch`;
#   2. the Python API in a real PyTorch process: asyncwatch.paused() around a pageable copy, and
#      asyncwatch.report() on the traces;
#   3. the pytest plugin on the GPU, when the machine has pytest;
#   4. a venv with --system-site-packages, when the machine's Python can make one;
#   5. the tarball unpacked elsewhere: its `bin/asyncwatch report` on the trace made in 1, and its
#      `bin/asyncwatch run` of the same script.
# Results in $OUT, five files (at most 8 come back): summary.txt, shipping.log (everything printed, the
# text reports included), torch_report.json, tarball_report.json, traces.tar.gz; exit status 1 if a check failed.
#   bash test_apps/gpu/run_shipping.sh [DIST_DIR]
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dist=$(cd "${1:-$root/build-dist}" 2>/dev/null && pwd)
out=${OUT:-$root/out/shipping}
mkdir -p "$out"
exec > >(tee "$out/shipping.log") 2>&1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
wheel=$(ls "$dist"/asyncwatch-*-py3-none-manylinux_*_x86_64.whl 2>/dev/null | head -n1)
tarball=$(ls "$dist"/asyncwatch-*-linux-x86_64.tar.gz 2>/dev/null | head -n1)
torch_script=$root/test_apps/gpu/torch_copies.py
if [ ! -f "$wheel" ] || [ ! -f "$tarball" ]; then
  echo "run_shipping.sh: no wheel or tarball in ${1:-$root/build-dist}: build them with \`bash .ci/package\` and carry build-dist/" >&2
  exit 2
fi
failed=0
check() {  # check NAME COMMAND...: runs it, records PASS/FAIL in summary.txt
  local name=$1; shift
  if "$@"; then echo "PASS $name" | tee -a "$out/summary.txt"
  else echo "FAIL $name" | tee -a "$out/summary.txt"; failed=1; fi
}
has_finding() {  # has_finding REPORT.json ID
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if any(f["id"]==sys.argv[2] for f in r["findings"]) else 1)' "$1" "$2"
}
: >"$out/summary.txt"

echo "== machine ($(date -u +%Y-%m-%dT%H:%MZ))"
uname -srm; ldd --version | head -n1; nvidia-smi -L 2>&1 | head -n2
python3 --version; python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)'
echo "wheel: $(basename "$wheel"), tarball: $(basename "$tarball")"

echo; echo "== 1. pip install --no-index --no-deps --target: asyncwatch run -- python3 torch_copies.py"
site=$work/site
check "pip install --target" python3 -m pip install -q --no-index --no-deps --target "$site" "$wheel"
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" PATH="$site/bin:$PATH"
echo "asyncwatch is $(command -v asyncwatch), $(asyncwatch --version); python3 -m asyncwatch: $(python3 -m asyncwatch --version)"
check "console script and python -m agree" test "$(asyncwatch --version)" = "$(python3 -m asyncwatch --version)"
( cd "$work" && asyncwatch run -o "$work/torch-traces" --format json --report-output "$out/torch_report.json" \
    -- python3 "$torch_script" )
check "asyncwatch run -- python3 torch_copies.py (exit 0)" test $? = 0
asyncwatch report "$work/torch-traces"
check "torch: pageable-async-copy reported" has_finding "$out/torch_report.json" pageable-async-copy
check "torch: the report matches test_apps/gpu/expected/torch_copies.json" python3 - "$out/torch_report.json" <<PY
import json, sys
sys.path.insert(0, "$root/test_apps/apps")
import check_app
ctx = check_app.Ctx("gpu", "shared")
case = check_app.load_case("$root/test_apps/gpu/expected/torch_copies.json", ctx)
errors, notes = check_app.compare_report(case, json.load(open(sys.argv[1])), ctx)
for line in errors + notes:
    print("  ", line)
sys.exit(1 if errors else 0)
PY

echo; echo "== 2. the Python API in a PyTorch process under asyncwatch"
cat >"$work/paused_copy.py" <<'PY'
import sys, torch, asyncwatch
x = torch.ones(1 << 26)  # 256 MiB, pageable
assert asyncwatch.active(), "the preload library is not loaded"
torch.zeros(1, device="cuda"); torch.cuda.synchronize()
with asyncwatch.paused():
    y = x.to("cuda", non_blocking=True)  # not recorded
    torch.cuda.synchronize()
print("recording resumed:", asyncwatch.recording(True))
z = y.cpu()  # recorded: pageable-async-copy
assert bool((z == 1).all())
PY
( cd "$work" && asyncwatch run -o "$work/api-traces" --format json --report-output "$work/api.json" \
    -- python3 "$work/paused_copy.py" )
check "control API under asyncwatch (exit 0)" test $? = 0
python3 - "$work/api-traces" <<'PY'
import sys, asyncwatch
r = asyncwatch.report(sys.argv[1])
for f in r.findings:
    print(f)
p = r.processes[0]
print(f"pauses {p.pauses}, paused {p.paused_ns / 1e6:.1f} ms; HtoD findings: {[f.id for f in r.findings if f.direction == 'HtoD']}")
ok = p.pauses == 1 and not [f for f in r.findings if f.direction == "HtoD" and f.id == "pageable-async-copy"] \
     and any(f.id == "pageable-async-copy" and f.direction == "DtoH" for f in r.findings)
sys.exit(0 if ok else 1)
PY
check "paused(): the paused HtoD copy is not reported, the DtoH one is; asyncwatch.report() reads it" test $? = 0

echo; echo "== 3. pytest --asyncwatch on the GPU"
if python3 -c 'import pytest' 2>/dev/null; then
  mkdir -p "$work/pytest"
  cat >"$work/pytest/test_torch_copy.py" <<'PY'
import torch

def test_cpu_copy_after_kernels():
    y = torch.ones(1 << 26, device="cuda")
    for _ in range(20):
        y.mul_(1.0)
    assert bool((y.cpu() == 1).all())
PY
  ( cd "$work/pytest" && python3 -m pytest -p no:cacheprovider -q --asyncwatch --asyncwatch-fail-on pageable-async-copy \
      test_torch_copy.py ) | tee "$work/pytest.txt"
  check "pytest --asyncwatch-fail-on pageable-async-copy fails the session (exit 1)" test "${PIPESTATUS[0]}" = 1
  check "pytest: the finding is in the summary" grep -q 'FAIL .*\[pageable-async-copy\]' "$work/pytest.txt"
else
  echo "skipped: no pytest in this Python" | tee -a "$out/summary.txt"
fi

echo; echo "== 4. a venv with --system-site-packages"
# Without the PYTHONPATH of 1, or pip would find the package installed there and install nothing.
# A python3 that is itself a venv (the H200's /opt/torch/.venv) gives a nested venv the base
# interpreter's site-packages, without torch: then the step says so instead of failing.
in_venv=$(env -u PYTHONPATH python3 -c 'import sys; print(int(sys.prefix != sys.base_prefix))' 2>/dev/null || echo 0)
if [ "$in_venv" = 1 ]; then
  echo "skipped: python3 is itself a virtual environment ($(env -u PYTHONPATH python3 -c 'import sys; print(sys.prefix)')): a venv made from it does not see its packages (torch)" | tee -a "$out/summary.txt"
elif env -u PYTHONPATH python3 -m venv --system-site-packages "$work/venv" 2>"$work/venv.err"; then
  check "pip install into the venv" env -u PYTHONPATH "$work/venv/bin/python" -m pip install -q --no-index --no-deps "$wheel"
  ( cd "$work" && env -u PYTHONPATH "$work/venv/bin/asyncwatch" run -o "$work/venv-traces" --format json \
      --report-output "$work/venv.json" -- "$work/venv/bin/python" "$torch_script" >/dev/null )
  check "venv: asyncwatch run -- python torch_copies.py" has_finding "$work/venv.json" pageable-async-copy
else
  echo "skipped: python3 -m venv failed: $(tail -n1 "$work/venv.err")" | tee -a "$out/summary.txt"
fi

echo; echo "== 5. the tarball, unpacked elsewhere"
mkdir "$work/elsewhere"
tar xzf "$tarball" -C "$work/elsewhere"
aw=$(ls "$work"/elsewhere/asyncwatch-*/bin/asyncwatch)
(cd "$work/elsewhere" && "$aw" report --format json -o "$out/tarball_report.json" "$work/torch-traces" && "$aw" report "$work/torch-traces")
check "tarball: bin/asyncwatch report of the trace made in 1" has_finding "$out/tarball_report.json" pageable-async-copy
check "tarball and wheel report the same findings" python3 - "$out/tarball_report.json" "$out/torch_report.json" <<'PY'
import json, sys
ids = [[(f["id"], f["direction"], f["count"]) for f in json.load(open(p))["findings"]] for p in sys.argv[1:]]
print("tarball:", ids[0]); print("wheel:  ", ids[1])
sys.exit(0 if sorted(ids[0]) == sorted(ids[1]) else 1)
PY
( cd "$work/elsewhere" && "$aw" run -o "$work/tarball-traces" --format json --report-output "$work/tarball-run.json" \
    -- python3 "$torch_script" >/dev/null )
check "tarball: bin/asyncwatch run -- python3 torch_copies.py" has_finding "$work/tarball-run.json" pageable-async-copy

tar czf "$out/traces.tar.gz" -C "$work" torch-traces api-traces 2>/dev/null
echo; echo "== summary"; cat "$out/summary.txt"
exit $failed
