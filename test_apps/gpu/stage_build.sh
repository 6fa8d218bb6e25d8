#!/usr/bin/env bash
# Copies what validate_on_gpu.sh needs from a build directory into a small one that can be carried
# to a GPU machine: the test_apps/<app>[.static] executables (the test apps, the benchmarks and the
# probe), lib/libasyncwatch.so, lib/asyncwatch/sim/ (the simulator: start-up is measured on it),
# bin/asyncwatch and the analyzer's benchmark tools (bin/asyncwatch_bench, asyncwatch_bench_gen).
# bin/asyncwatch runs there only if its shared libraries do (the release build links them in).
#
#   bash test_apps/gpu/stage_build.sh [BUILD=build] [DEST=build-gpu] [--before BUILD] [--pack]
#     --before BUILD  an earlier build's library and analyzer into DEST/before/, which
#                     validate_on_gpu.sh compares against (overhead, startup, analyzer)
#     --pack          also write build-pack/DEST.tar.xz (validate_on_gpu.sh --archive unpacks it):
#                     the test apps' debug information compresses well
#
# then, on the GPU machine:  OUT=... bash test_apps/gpu/validate_on_gpu.sh --build DEST CHECK...
# To fit a carry limit strip only bin/ and lib/ (strip -g), never the test apps: their debug
# information is what their expected call sites are checked against (stripped, every call site
# reads None:None).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
args=() before="" pack=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --before) before=$(cd "${2:?}" && pwd); shift ;;
    --pack) pack=1 ;;
    *) args+=("$1") ;;
  esac
  shift
done
build=$(cd "${args[0]:-$root/build}" && pwd)
dest=${args[1]:-$root/build-gpu}
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib" "$dest/test_apps"
for f in "$build"/test_apps/*; do
  [ -f "$f" ] && [ -x "$f" ] && cp "$f" "$dest/test_apps/"
done
[ -f "$build/lib/libasyncwatch.so" ] && cp "$build/lib/libasyncwatch.so" "$dest/lib/" || echo "stage_build: no $build/lib/libasyncwatch.so" >&2
[ -f "$build/bin/asyncwatch" ] && cp "$build/bin/asyncwatch" "$dest/bin/" || echo "stage_build: no $build/bin/asyncwatch" >&2
for t in asyncwatch_bench asyncwatch_bench_gen; do
  [ -x "$build/bin/$t" ] && cp "$build/bin/$t" "$dest/bin/"
done
if [ -d "$build/lib/asyncwatch/sim" ]; then
  mkdir -p "$dest/lib/asyncwatch" && cp -r "$build/lib/asyncwatch/sim" "$dest/lib/asyncwatch/"
else
  echo "stage_build: no $build/lib/asyncwatch/sim" >&2
fi
if [ -n "$before" ]; then
  mkdir -p "$dest/before/lib" "$dest/before/bin"
  cp "$before/lib/libasyncwatch.so" "$dest/before/lib/"
  [ -f "$before/bin/asyncwatch" ] && cp "$before/bin/asyncwatch" "$dest/before/bin/"
fi
du -sh "$dest"
if [ -n "$pack" ]; then
  mkdir -p "$root/build-pack"
  tar -C "$(dirname "$dest")" -cJf "$root/build-pack/$(basename "$dest").tar.xz" "$(basename "$dest")"
  du -sh "$root/build-pack/$(basename "$dest").tar.xz"
fi
