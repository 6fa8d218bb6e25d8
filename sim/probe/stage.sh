#!/usr/bin/env bash
# Copies what run_probe.sh needs (the probe, the test apps in both
# builds, libasyncwatch.so, asyncwatch) from a build directory into a small one that fits the device
# machine's carry limit (about 45 MiB; test_apps/gpu/stage_build.sh copies every app). The apps'
# names go into DEST/cases.txt: run_probe.sh validates those cases (their expectation files in
# test_apps/apps/expected/ have the apps' names).
#   bash sim/probe/stage.sh [BUILD=build] [DEST=build-gpu14]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
dest=${2:-$root/build-gpu14}
apps="small_d2h_stack graph_pageable_capture graph_explicit_nodes malloc_sites clean_memset_launch
      first_call_launch cross_stream_wait four_thread_launches host_fn_times prefetch_attach batch_copies
      peer_3d_arrays killed_in_flight event_query_poll pinned_vs_pageable two_devices"
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib" "$dest/test_apps"
for a in gpu_rules_probe $apps; do
  for f in "$build/test_apps/$a" "$build/test_apps/$a.static"; do
    [ -x "$f" ] || { echo "stage: missing $f (build with ASYNCWATCH_BUILD_TEST_APPS=ON)" >&2; exit 1; }
    cp "$f" "$dest/test_apps/"
  done
done
echo $apps | tr ' ' ',' > "$dest/cases.txt"
cp "$build/test_apps/libaw_proc_probe.so" "$dest/test_apps/"
cp "$build/lib/libasyncwatch.so" "$dest/lib/"
[ -f "$build/bin/asyncwatch" ] && cp "$build/bin/asyncwatch" "$dest/bin/"
du -sh "$dest"
