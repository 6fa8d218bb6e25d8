#!/usr/bin/env python3
"""PyTorch copies that asyncwatch must catch (run under LD_PRELOAD=libasyncwatch.so on the H200):
  1. 1 GiB pageable tensor .to('cuda', non_blocking=True): staged, blocks (H200: 130-150 ms)
  2. .cpu() of 1 GiB right after a long kernel: cuMemcpyDtoHAsync into pageable memory, blocks for
     the kernel and the copy (H200: ~680 ms)
  3. pinned control: 1 GiB pin_memory tensor .to('cuda', non_blocking=True): only enqueues (0.5 ms)
Prints one line per copy: "torch <what>: <ms> ms"; checks the data; exit 0/1.
"""
import sys
import time

import torch

GIB = 1 << 30
n = GIB // 4  # float32 elements


def timed(what, fn):
    t0 = time.perf_counter()
    r = fn()
    ms = (time.perf_counter() - t0) * 1e3
    print(f"torch {what}: {ms:.3f} ms", flush=True)
    return r


def main():
    if not torch.cuda.is_available():
        print("torch: CUDA not available", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    torch.zeros(1, device=dev)  # context, lazy init
    torch.cuda.synchronize()
    x = torch.full((n,), 3.0, dtype=torch.float32)  # pageable
    y = timed("pageable H2D 1 GiB .to(cuda, non_blocking=True)", lambda: x.to(dev, non_blocking=True))
    torch.cuda.synchronize()
    # a long-ish kernel before the D2H: a few passes over the 1 GiB tensor
    for _ in range(20):
        y.mul_(1.0)
    z = timed("pageable D2H 1 GiB .cpu() after kernels", lambda: y.cpu())
    ok = bool(z[0] == 3.0 and z[-1] == 3.0)
    xp = torch.full((n,), 5.0, dtype=torch.float32).pin_memory()
    yp = timed("pinned H2D 1 GiB .to(cuda, non_blocking=True)", lambda: xp.to(dev, non_blocking=True))
    torch.cuda.synchronize()
    ok = ok and bool(yp[0].item() == 5.0 and yp[-1].item() == 5.0)
    print(f"torch {torch.__version__} cuda {torch.version.cuda}: data {'ok' if ok else 'WRONG'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
