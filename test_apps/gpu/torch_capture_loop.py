#!/usr/bin/env python3
"""A PyTorch training loop for the capture-range GPU check (test_apps/gpu/torch_capture.sh): random data
through a DataLoader (pin_memory=False: pageable batches), a small MLP, SGD, loss.item() every step,
for at least --seconds; torch.cuda.profiler.start()/stop() around steps --range A:B.

Output, one line:
  steps=N seconds=S step_us_mean=M vmhwm_kib=H
"""
import argparse
import sys
import time


def vmhwm_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return -1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=300.0, help="run at least this long [300]")
    ap.add_argument("--range", default="", help="A:B: cudaProfilerStart before step A, Stop after step B")
    args = ap.parse_args()

    import torch
    from torch.utils.data import DataLoader, TensorDataset

    if not torch.cuda.is_available():
        print("torch_capture_loop: no CUDA device", file=sys.stderr)
        return 2
    start_step, stop_step = (int(x) for x in args.range.split(":")) if args.range else (-1, -1)
    dev = torch.device("cuda")
    data = TensorDataset(torch.randn(4096, 256), torch.randn(4096, 1))
    loader = DataLoader(data, batch_size=64, shuffle=True, pin_memory=False, num_workers=0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 1)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    steps = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < args.seconds:
        for x, y in loader:
            if steps == start_step:
                torch.cuda.profiler.start()
            x, y = x.to(dev), y.to(dev)  # pageable host batches
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss.item()  # a synchronizing device-to-host copy every step
            if steps == stop_step:
                torch.cuda.profiler.stop()
            steps += 1
            if time.perf_counter() - t0 >= args.seconds:
                break
    elapsed = time.perf_counter() - t0
    print(f"steps={steps} seconds={elapsed:.1f} step_us_mean={elapsed / steps * 1e6:.1f} vmhwm_kib={vmhwm_kib()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
