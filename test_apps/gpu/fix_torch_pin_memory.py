#!/usr/bin/env python3
"""Fix pair (test_apps/apps/fix_pairs.py): host-to-device copies with non_blocking=True from pageable
memory (flagged: pageable-async-copy, staged) vs from pinned memory, as the PyTorch tutorial "A guide
on good usage of non_blocking and pin_memory() in PyTorch" writes them. Both variants make both
tensors (pinning is set-up, not part of the loop).

  fix_torch_pin_memory.py [--fixed] [steps=8] [MiB=256]
Prints "# loop: X ms" on stderr (the loop, up to its last result).
"""
import sys
import time

import torch

fixed = len(sys.argv) > 1 and sys.argv[1] == "--fixed"
args = sys.argv[2:] if fixed else sys.argv[1:]
steps = int(args[0]) if len(args) > 0 else 8
mib = int(args[1]) if len(args) > 1 else 256

pageable = torch.randn(mib, 256, 1024)  # mib MiB of float32
pinned = pageable.pin_memory()
batch = pinned if fixed else pageable
model = torch.nn.Linear(1024, 1024).cuda()
with torch.no_grad():
    model(batch[:1].to("cuda"))  # warm-up: kernels loaded, cuBLAS handle made
    torch.cuda.synchronize()
    total = torch.zeros((), device="cuda")
    t0 = time.perf_counter()
    for _ in range(steps):
        x = batch.to("cuda", non_blocking=True)
        total += model(x).sum()
    torch.cuda.synchronize()
    print(f"# loop: {(time.perf_counter() - t0) * 1e3:.3f} ms", file=sys.stderr)
    print(f"{steps} steps: {'pinned' if fixed else 'pageable'}: {total.item() != 0}")
