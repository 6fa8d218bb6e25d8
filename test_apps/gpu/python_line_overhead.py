#!/usr/bin/env python3
"""Overhead of the Python frames in a PyTorch loop: ITERATIONS of a small training-like
step whose calls get stacks (a pageable non_blocking copy, a pinned one, a small kernel chain and
a loss.item() that waits), timed after a warm-up. Modes:
  bare      plain run (start it without asyncwatch)
  traced    under asyncwatch, recording (run it with ASYNCWATCH_PYTHON=on or off)
  paused    under asyncwatch, recording paused (asyncwatch_set_recording(0))
  profiler  bare, inside torch.profiler.profile(with_stack=True) (CPU and CUDA activities)
Prints one line "overhead MODE: X us per iteration (N iterations)".

    python python_line_overhead.py MODE [ITERATIONS]"""
import ctypes
import sys
import time

import torch


def step(x_pageable, x_pinned, w, dev):
    a = x_pageable.to(dev, non_blocking=True)
    b = x_pinned.to(dev, non_blocking=True)
    y = (a @ w).relu() + b[: a.shape[0]].unsqueeze(1)
    return y.sum().item()


def main():
    mode = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    dev = torch.device("cuda")
    x_pageable = torch.randn(256, 256)
    x_pinned = torch.randn(256 * 256).pin_memory()
    w = torch.randn(256, 256, device=dev)
    for _ in range(50):
        step(x_pageable, x_pinned, w, dev)
    torch.cuda.synchronize()
    if mode == "paused":
        fn = getattr(ctypes.CDLL(None), "asyncwatch_set_recording", None)
        if fn is None:
            print("overhead paused: not under asyncwatch", file=sys.stderr)
            return 2
        fn.argtypes, fn.restype = [ctypes.c_int], ctypes.c_int
        fn(0)
    t0 = time.perf_counter()
    if mode == "profiler":
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], with_stack=True) as prof:
            for _ in range(n):
                step(x_pageable, x_pinned, w, dev)
            torch.cuda.synchronize()
        took = time.perf_counter() - t0
        t1 = time.perf_counter()
        n_events = len(prof.events())
        print(f"profiler: {n_events} events, post-processing {(time.perf_counter() - t1) * 1e3:.0f} ms")
    else:
        for _ in range(n):
            step(x_pageable, x_pinned, w, dev)
        torch.cuda.synchronize()
        took = time.perf_counter() - t0
    print(f"overhead {mode}: {took / n * 1e6:.2f} us per iteration ({n} iterations)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
