#!/usr/bin/env bash
# On the GPU machine, from the repository root, with a directory staged by stage.sh: the
# measurements the simulator's model rests on (docs/simulator.md, "Checked on a GPU"), then the
# test apps validated against their expectation files (test_apps/gpu/validate.py).
#  1. gpu_rules_probe (shared and static runtime) bare, and under libaw_proc_probe.so (which driver
#     entry points the real runtime asks for and calls); five apps under the call log as well;
#     all in $OUT/probe.tar.gz.
#  2. validate.py for the cases in BUILD_DIR/cases.txt, both builds, bare and under asyncwatch:
#     $OUT/validate.tar.gz and $OUT/summary.txt (back here: tar xzf validate.tar.gz &&
#     python3 test_apps/apps/check_app.py results validate --build build).
# Stays under the device machine's 10 minutes per command: the second step gets what is left of 560 s.
#   bash sim/probe/run_probe.sh [BUILD_DIR=build-gpu14]
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build-gpu14}" && pwd)
out=${OUT:-$root/probe-out}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/probe" "$out"
apps="$build/test_apps"
{
  date -u; uname -a; nvidia-smi --query-gpu=name,driver_version --format=csv 2>&1 | head -3
} > "$work/probe/info.txt"
for linkage in shared static; do
  exe="$apps/gpu_rules_probe"; [ "$linkage" = static ] && exe="$apps/gpu_rules_probe.static"
  [ -x "$exe" ] || { echo "missing $exe" >> "$work/probe/info.txt"; continue; }
  timeout 60 "$exe" > "$work/probe/bare.$linkage.txt" 2>&1; echo "rc=$?" >> "$work/probe/bare.$linkage.txt"
  AW_PROBE_LOG="$work/probe/calls.$linkage.log" LD_PRELOAD="$apps/libaw_proc_probe.so" timeout 60 "$exe" \
    > "$work/probe/probed.$linkage.txt" 2>&1; echo "rc=$?" >> "$work/probe/probed.$linkage.txt"
done
# The test apps once more under the call log: which entry points their new APIs reach.
for app in graph_explicit_nodes batch_copies prefetch_attach peer_3d_arrays two_devices; do
  [ -x "$apps/$app" ] || continue
  AW_PROBE_LOG="$work/probe/calls.app.$app.log" LD_PRELOAD="$apps/libaw_proc_probe.so" timeout 30 "$apps/$app" \
    > "$work/probe/app.$app.txt" 2>&1; echo "rc=$?" >> "$work/probe/app.$app.txt"
done
echo "probe step: $SECONDS s" >> "$work/probe/info.txt"
tar czf "$out/probe.tar.gz" -C "$work" probe
cat "$work/probe/bare.shared.txt"
echo "results: $out/probe.tar.gz ($SECONDS s)"

left=$((560 - SECONDS))
if [ ! -f "$build/cases.txt" ]; then
  echo "no $build/cases.txt (not staged by stage.sh): validation skipped"
elif [ "$left" -lt 200 ]; then
  echo "only $left s left: validation skipped"
else
  OUT="$out" PYTHONUNBUFFERED=1 timeout -k 10 "$left" python3 "$root/test_apps/gpu/validate.py" --build "$build" \
    --out "$out" --no-python --cases "$(cat "$build/cases.txt")" --budget-s $((left - 170))
fi
