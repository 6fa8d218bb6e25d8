#!/usr/bin/env bash
# The Python line on a GPU: the findings of PyTorch, CuPy, Numba and JAX ops at their Python lines,
# and the overhead of the Python frames (`validate_on_gpu.sh python` runs it). From the repository
# root, with a build staged by stage_build.sh:
#
#   bash test_apps/gpu/python_line.sh [BUILD_DIR=build-gpu]      (PYTHON=/opt/torch/.venv/bin/python3)
#
# Parts, each under its own timeout, a failure recorded in summary.txt and never stopping the rest:
#   torch-debug   python_line_torch.py bare with torch.cuda.set_sync_debug_mode("warn")
#   torch-aw      python_line_torch.py traced (LD_PRELOAD=libasyncwatch.so)
#   cupy-aw, numba-aw, jax-aw   python_line_others.py traced
#   overhead-*    python_line_overhead.py: bare, traced (Python frames on / off), paused, torch.profiler
#   reports       asyncwatch report (text, json, sarif) of each trace directory, if bin/asyncwatch runs here
# Results: $OUT/python_line.tar.gz (python_line/<part>.{stdout,stderr,rc,time}, traces/<part>/,
# reports/<part>.{txt,json,sarif}, torch_warnings.json) and $OUT/summary.txt. Back on the
# development machine: python3 test_apps/gpu/python_line_table.py RESULTS_DIR (the side-by-side
# table: op, line, torch's warning, asyncwatch's finding). Wall time: about 2-3 minutes; new parts are skipped after 200 s.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build-gpu}" && pwd)
py=${PYTHON:-/opt/torch/.venv/bin/python3}
out=${OUT:-$root/python-line-out}
work=$(mktemp -d)
res=$work/python_line
mkdir -p "$out" "$res/traces" "$res/reports"
lib=$build/lib/libasyncwatch.so
aw=$build/bin/asyncwatch
here=$root/test_apps/gpu
start=$(date +%s)
summary=$res/summary.txt
: >"$summary"
export PYTHONUNBUFFERED=1

# part NAME TIMEOUT TRACED(0|1) ENV... -- ARGS...
part() {
  local name=$1 limit=$2 traced=$3
  shift 3
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  if [ $(( $(date +%s) - start )) -gt 200 ]; then
    echo "$name: skipped (time budget spent)" | tee -a "$summary"
    return
  fi
  if [ "$traced" = 1 ]; then
    mkdir -p "$res/traces/$name"
    envs+=("LD_PRELOAD=$lib" "ASYNCWATCH_OUTPUT_DIR=$res/traces/$name")
  fi
  local t0 t1 rc
  t0=$(date +%s.%N)
  env "${envs[@]}" timeout -k 5 "$limit" "$@" >"$res/$name.stdout" 2>"$res/$name.stderr"
  rc=$?
  t1=$(date +%s.%N)
  echo "$rc" >"$res/$name.rc"
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f\n", b - a }' >"$res/$name.time"
  echo "$name: rc $rc, $(cat "$res/$name.time") s$([ "$rc" = 124 ] && echo ' (timed out)')" | tee -a "$summary"
}

{
  echo "host $(hostname), $(date -u +%FT%TZ), python $py: $("$py" -c 'import sys; print(sys.version.split()[0])' 2>&1)"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1
} >>"$summary"
[ -f "$lib" ] || echo "no $lib: the traced parts will run untraced" >>"$summary"

part torch-debug 60 0 -- "$py" "$here/python_line_torch.py" debug 20 "$res/torch_warnings.json"
part torch-aw 60 1 -- "$py" "$here/python_line_torch.py" plain 20 "$res/torch_aw_times.json"
part cupy-aw 45 1 -- "$py" "$here/python_line_others.py" cupy 20
part numba-aw 45 1 -- "$py" "$here/python_line_others.py" numba 20
part jax-aw 60 1 XLA_PYTHON_CLIENT_PREALLOCATE=false -- "$py" "$here/python_line_others.py" jax 20
for round in 1 2; do
  part overhead-bare-$round 40 0 -- "$py" "$here/python_line_overhead.py" bare 3000
  part overhead-traced-$round 40 1 ASYNCWATCH_PYTHON=on -- "$py" "$here/python_line_overhead.py" traced 3000
  part overhead-traced-nopy-$round 40 1 ASYNCWATCH_PYTHON=off -- "$py" "$here/python_line_overhead.py" traced 3000
  part overhead-paused-$round 40 1 -- "$py" "$here/python_line_overhead.py" paused 3000
done
part overhead-profiler 60 0 -- "$py" "$here/python_line_overhead.py" profiler 3000

# Reports here when the command runs on this machine (else the checker makes them from the traces).
if [ -x "$aw" ] && "$aw" --version >/dev/null 2>&1; then
  for d in "$res"/traces/*/; do
    name=$(basename "$d")
    ls "$d"/*.awtrace >/dev/null 2>&1 || continue
    for f in text json sarif; do
      ext=$f; [ $f = text ] && ext=txt
      timeout 60 "$aw" report --format $f -o "$res/reports/$name.$ext" "$d" 2>>"$res/reports/$name.stderr"
    done
  done
  echo "reports: written by $aw" >>"$summary"
else
  echo "reports: $aw does not run here; python_line_table.py makes them from the traces" >>"$summary"
fi
# Overhead traces are large and not needed back.
rm -rf "$res"/traces/overhead-*
echo "total $(( $(date +%s) - start )) s" >>"$summary"
tar czf "$out/python_line.tar.gz" -C "$work" python_line
cp "$summary" "$out/summary.txt"
rm -rf "$work"
cat "$out/summary.txt"
