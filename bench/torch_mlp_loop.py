#!/usr/bin/env python3
"""PyTorch training loop made of many small kernels (docs/performance.md).

A 16-layer, 64-wide MLP (Linear + ReLU), batch 64, MSE loss, SGD; torch.cuda.synchronize() after
every step. Prints the median (and min) step time in microseconds over the timed steps, which follow
a warm-up. Run by run_torch.sh: bare, under LD_PRELOAD=libasyncwatch.so, and with --profiler
(torch.profiler recording ProfilerActivity.CUDA, i.e. a CUPTI-based profiler).

Output, one line:
  mode=bare steps=300 median_us=812.3 min_us=790.1 mean_us=815.0
(--profiler adds cuda_events_per_step=N: the kernels and copies the profiler saw per step.)
"""
import argparse
import contextlib
import os
import statistics
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profiler", action="store_true",
                    help="record with torch.profiler (activities: CUDA)")
    ap.add_argument("--profiler-cpu", action="store_true",
                    help="with --profiler: record CPU activity as well")
    ap.add_argument("--steps", type=int, default=300, help="timed steps [300]")
    ap.add_argument("--warmup", type=int, default=50, help="untimed steps first [50]")
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--copy", action="store_true",
                    help="also copy the batch from pinned host memory every step (non_blocking)")
    args = ap.parse_args()

    import torch

    if not torch.cuda.is_available():
        print("torch_mlp_loop: no CUDA device", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    torch.manual_seed(0)
    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.width, args.width), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.MSELoss()
    x = torch.randn(args.batch, args.width, device=dev)
    y = torch.randn(args.batch, args.width, device=dev)
    x_host = torch.randn(args.batch, args.width).pin_memory() if args.copy else None

    def step() -> None:
        inp = x_host.to(dev, non_blocking=True) if args.copy else x
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(inp), y)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()

    if args.profiler:
        from torch.profiler import ProfilerActivity, profile
        activities = [ProfilerActivity.CUDA]
        if args.profiler_cpu:
            activities.append(ProfilerActivity.CPU)
        ctx = profile(activities=activities)
        mode = "profiler"
    else:
        ctx = contextlib.nullcontext()
        mode = "asyncwatch" if "libasyncwatch" in os.environ.get("LD_PRELOAD", "") else "bare"

    times_ns = []
    with ctx as prof:
        for _ in range(args.warmup):
            step()
        for _ in range(args.steps):
            t0 = time.perf_counter_ns()
            step()
            times_ns.append(time.perf_counter_ns() - t0)

    extra = ""
    if args.profiler and prof is not None:
        try:
            n = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
            extra = f" cuda_events_per_step={n / (args.warmup + args.steps):.1f}"
        except Exception as e:  # reporting only; never fail the measurement for it
            extra = f" cuda_events_per_step=? ({type(e).__name__})"
    med = statistics.median(times_ns) / 1e3
    print(f"mode={mode} steps={args.steps} median_us={med:.1f} min_us={min(times_ns) / 1e3:.1f}"
          f" mean_us={statistics.mean(times_ns) / 1e3:.1f}{extra}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
