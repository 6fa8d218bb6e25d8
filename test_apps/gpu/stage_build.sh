#!/usr/bin/env bash
# Copies what validate.sh needs from a build directory into a small one that fits the device
# machine's carry limit (64 MiB with the working tree): test_apps/<app>[.static] executables,
# lib/libasyncwatch.so, lib/asyncwatch/sim/ (the simulator) and bin/asyncwatch (the latter only runs
# there if its shared libraries do).
#   bash test_apps/gpu/stage_build.sh [BUILD=build] [DEST=build-gpu]
# then, on the GPU machine:  bash test_apps/gpu/validate.sh DEST
# To fit the carry limit strip only bin/ and lib/ (strip -g): the test apps' debug information is
# what their expected call sites are checked against (stripped, every call site reads None:None).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
dest=${2:-$root/build-gpu}
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib" "$dest/test_apps"
for f in "$build"/test_apps/*; do
  [ -f "$f" ] && [ -x "$f" ] && cp "$f" "$dest/test_apps/"
done
[ -f "$build/lib/libasyncwatch.so" ] && cp "$build/lib/libasyncwatch.so" "$dest/lib/" || echo "stage_build: no $build/lib/libasyncwatch.so" >&2
[ -f "$build/bin/asyncwatch" ] && cp "$build/bin/asyncwatch" "$dest/bin/" || echo "stage_build: no $build/bin/asyncwatch" >&2
# The simulator (test_apps/bench/startup.sh measures start-up on it, on the GPU machine's idle CPU).
if [ -d "$build/lib/asyncwatch/sim" ]; then
  mkdir -p "$dest/lib/asyncwatch" && cp -r "$build/lib/asyncwatch/sim" "$dest/lib/asyncwatch/"
else
  echo "stage_build: no $build/lib/asyncwatch/sim" >&2
fi
du -sh "$dest"
