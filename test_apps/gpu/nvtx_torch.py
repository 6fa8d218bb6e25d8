#!/usr/bin/env python3
"""NVTX ranges of code asyncwatch did not write, on a GPU (torch.cuda.nvtx, PyTorch's own
NVTX binding). 10 iterations of a kernel then a pageable .cpu() (D2H, waits for the kernel), 8 of
them inside torch.cuda.nvtx.range_push("train_step") ... range_pop(); then 5 more .cpu() outside any
range (another line). Prints deterministic lines only; exit 0/1 (data), 2 (no CUDA)."""
import sys

import torch


def main():
    if not torch.cuda.is_available():
        print("torch: CUDA not available", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    y = torch.ones(1 << 22, device=dev)
    torch.cuda.synchronize()
    ok = True
    for i in range(10):
        ranged = i >= 2
        if ranged:
            torch.cuda.nvtx.range_push("train_step")
        for _ in range(20):
            y.mul_(1.0)
        z = y.cpu()  # RANGED_CPU
        ok = ok and bool(z[0] == 1.0)
        if ranged:
            torch.cuda.nvtx.range_pop()
    for i in range(5):
        for _ in range(20):
            y.mul_(1.0)
        z = y.cpu()  # UNRANGED_CPU
        ok = ok and bool(z[-1] == 1.0)
    print(f"nvtx_torch: data {'ok' if ok else 'WRONG'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
