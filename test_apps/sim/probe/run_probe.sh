#!/usr/bin/env bash
# On the GPU machine, from the repository root: the measurements the simulator's model rests on
# (docs/simulator.md, "Checked on a GPU"). Runs gpu_rules_probe (shared and static runtime) bare, and
# under libaw_proc_probe.so (which driver entry points the real runtime asks for and calls), and
# packs everything into $OUT/probe.tar.gz.
#   bash test_apps/sim/probe/run_probe.sh [BUILD_DIR=build-gpu]
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
build=$(cd "${1:-$root/build-gpu}" && pwd)
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
  timeout 120 "$exe" > "$work/probe/bare.$linkage.txt" 2>&1; echo "rc=$?" >> "$work/probe/bare.$linkage.txt"
  AW_PROBE_LOG="$work/probe/calls.$linkage.log" LD_PRELOAD="$apps/libaw_proc_probe.so" timeout 120 "$exe" \
    > "$work/probe/probed.$linkage.txt" 2>&1; echo "rc=$?" >> "$work/probe/probed.$linkage.txt"
done
# The issue 14/20 apps once more under the call log: which entry points their new APIs reach.
for app in graph_explicit_nodes batch_copies prefetch_attach peer_3d_arrays two_devices; do
  [ -x "$apps/$app" ] || continue
  AW_PROBE_LOG="$work/probe/calls.app.$app.log" LD_PRELOAD="$apps/libaw_proc_probe.so" timeout 120 "$apps/$app" \
    > "$work/probe/app.$app.txt" 2>&1; echo "rc=$?" >> "$work/probe/app.$app.txt"
done
tar czf "$out/probe.tar.gz" -C "$work" probe
cat "$work/probe/bare.shared.txt"
echo "results: $out/probe.tar.gz"
