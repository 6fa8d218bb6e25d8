#!/usr/bin/env python3
"""The Python line of PyTorch ops: each op at its own line (marked `# OP:name`), ITERATIONS times, with a
~2 ms kernel (torch.cuda._sleep) queued before each op. Run bare with
torch.cuda.set_sync_debug_mode("warn") (mode `debug`: the warnings go to WARNINGS_JSON with their
lines) and separately under asyncwatch (mode `plain`).

    python python_line_torch.py debug|plain [ITERATIONS [WARNINGS_JSON]]
Prints the measured kernel time and one line per op (mean time of the op's line)."""
import io
import json
import sys
import time
import warnings

import torch

KERNEL_MS = 2.0


def calibrate(dev):
    """Cycles of torch.cuda._sleep that take ~KERNEL_MS on this GPU."""
    cycles = 1_000_000
    torch.cuda._sleep(cycles)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(cycles)
    end.record()
    end.synchronize()
    ms = start.elapsed_time(end)
    return int(cycles * KERNEL_MS / max(ms, 1e-3))


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "plain"
    iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    out_json = sys.argv[3] if len(sys.argv) > 3 else None
    dev = torch.device("cuda")
    t = torch.arange(1, 1 << 16, device=dev, dtype=torch.float32)
    loss = t.sum()
    mask = t > 100
    x_pageable = torch.ones(1 << 20)
    x_pinned = torch.ones(1 << 20).pin_memory()
    out_pinned = torch.empty(t.shape, dtype=t.dtype).pin_memory()
    side = torch.cuda.Stream()
    sink = io.StringIO()
    cycles = calibrate(dev)
    sleep = torch.cuda._sleep
    times = {}

    def timed(name, t0):
        times.setdefault(name, []).append((time.perf_counter() - t0) * 1e3)

    caught = []
    if mode == "debug":
        torch.cuda.set_sync_debug_mode("warn")
        warnings.simplefilter("always")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(iterations):
            sleep(cycles); t0 = time.perf_counter()
            loss.item()  # OP:item
            timed("item", t0)
            sleep(cycles); t0 = time.perf_counter()
            t.cpu()  # OP:cpu
            timed("cpu", t0)
            sleep(cycles); t0 = time.perf_counter()
            t.tolist()  # OP:tolist
            timed("tolist", t0)
            sleep(cycles); t0 = time.perf_counter()
            x_pageable.to(dev, non_blocking=True)  # OP:pageable_non_blocking
            timed("pageable_non_blocking", t0)
            sleep(cycles); t0 = time.perf_counter()
            torch.nonzero(t)  # OP:nonzero
            timed("nonzero", t0)
            sleep(cycles); t0 = time.perf_counter()
            t[mask]  # OP:mask_index
            timed("mask_index", t0)
            sleep(cycles); t0 = time.perf_counter()
            print(t, file=sink)  # OP:print
            timed("print", t0)
            sleep(cycles); t0 = time.perf_counter()
            if t.sum() > 0:  # OP:if_sum
                pass
            timed("if_sum", t0)
            sleep(cycles); t0 = time.perf_counter()
            torch.unique(t)  # OP:unique
            timed("unique", t0)
            sleep(cycles); t0 = time.perf_counter()
            t.unique()  # OP:tensor_unique
            timed("tensor_unique", t0)
            sleep(cycles); t0 = time.perf_counter()
            torch.cuda.synchronize()  # OP:synchronize
            timed("synchronize", t0)
            sleep(cycles); t0 = time.perf_counter()
            x_pinned.to(dev, non_blocking=True)  # OP:pinned_non_blocking
            timed("pinned_non_blocking", t0)
            sleep(cycles); t0 = time.perf_counter()
            with torch.cuda.stream(side):
                out_pinned.copy_(t, non_blocking=True)  # OP:side_stream_d2h_pinned
            timed("side_stream_d2h_pinned", t0)
            torch.cuda.synchronize()
    if mode == "debug":
        torch.cuda.set_sync_debug_mode("default")
    rows = [{"file": w.filename, "line": w.lineno, "category": w.category.__name__, "message": str(w.message)[:200]}
            for w in caught]
    if out_json:
        with open(out_json, "w") as f:
            json.dump({"warnings": rows, "times_ms": {k: sum(v) / len(v) for k, v in times.items()},
                       "kernel_cycles": cycles, "torch": torch.__version__}, f, indent=1)
    print(f"torch {torch.__version__}: {len(rows)} warnings, kernel {cycles} cycles (~{KERNEL_MS} ms)")
    for k, v in times.items():
        print(f"  {k}: {sum(v) / len(v):.3f} ms per call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
