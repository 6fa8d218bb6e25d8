#!/usr/bin/env bash
# Overhead and PyTorch checks of libasyncwatch on the GPU machine.
# Usage: run_h200_overhead.sh LIBASYNCWATCH AW_TRACE_DUMP
set -u
lib=$1; dump=$2
src=$(dirname "$0")/h200_check.cu
nvcc -O2 -o /tmp/cs "$src" && nvcc -O2 -cudart shared -o /tmp/csh "$src" || exit 1
for i in 1 2 3; do
  for app in /tmp/cs /tmp/csh; do
    echo "$app bare: $($app 1 50000 | grep 'per call')"
    echo "$app default: $(LD_PRELOAD=$lib ASYNCWATCH_LOG=info ASYNCWATCH_OUTPUT_DIR=/tmp $app 1 50000 2>&1 | grep -E 'per call|cache' | tr '\n' ' ')"
    echo "$app stacks=none: $(LD_PRELOAD=$lib ASYNCWATCH_QUIET=1 ASYNCWATCH_STACKS=none ASYNCWATCH_OUTPUT_DIR=/tmp $app 1 50000 | grep 'per call')"
    echo "$app none+evidence=off: $(LD_PRELOAD=$lib ASYNCWATCH_QUIET=1 ASYNCWATCH_STACKS=none ASYNCWATCH_EVIDENCE=off ASYNCWATCH_OUTPUT_DIR=/tmp $app 1 50000 | grep 'per call')"
  done
done
mkdir -p /tmp/pt && rm -f /tmp/pt/*
cat > /tmp/pt/t.py <<'PY'
import time, torch
x = torch.ones(256 << 20, dtype=torch.uint8)          # 256 MiB pageable
torch.cuda.synchronize()
t = time.perf_counter(); y = x.to('cuda', non_blocking=True); print("pageable non_blocking: %.1f ms" % ((time.perf_counter() - t) * 1e3))
p = x.pin_memory()
t = time.perf_counter(); z = p.to('cuda', non_blocking=True); print("pinned non_blocking: %.1f ms" % ((time.perf_counter() - t) * 1e3))
torch.cuda.synchronize()
print("back:", y.cpu()[0].item())
PY
(cd /tmp/pt && ASYNCWATCH_OUTPUT_DIR=/tmp/pt LD_PRELOAD=$lib python3 t.py)
for t in /tmp/pt/*.awtrace; do "$dump" "$t" | grep -E "closed|DEVICE|COPY|MEMOP" | grep -v "bytes=4 \|bytes=8 " | head -20; done
