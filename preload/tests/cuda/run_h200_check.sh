#!/usr/bin/env bash
# Runs cuda/h200_check.cu on a real GPU, bare and under libasyncwatch.so, static and shared
# runtime, and prints the traces. Usage: run_h200_check.sh LIBASYNCWATCH AW_TRACE_DUMP OUTDIR
set -u
lib=$1; dump=$2; out=$3
src=$(dirname "$0")/h200_check.cu
mkdir -p "$out"
nvcc -O2 -o "$out/check.static" "$src" || exit 1
nvcc -O2 -cudart shared -o "$out/check.shared" "$src" || exit 1
for kind in static shared; do
  echo "=== $kind, bare"
  "$out/check.$kind" 64 20000
  echo "=== $kind, LD_PRELOAD"
  dir="$out/traces-$kind"; mkdir -p "$dir"
  ASYNCWATCH_OUTPUT_DIR="$dir" LD_PRELOAD="$lib" "$out/check.$kind" 64 20000
  for t in "$dir"/*.awtrace; do "$dump" "$t" | head -60; ls -la "$t"; done
done
