#!/usr/bin/env python3
"""Fix pair (test_apps/apps/fix_pairs.py): a training loop that reads the loss with .item() every
step (flagged: hidden-sync, the host waits for the step and the GPU then stands idle while Python
prepares the next one) vs one that accumulates the loss on the GPU and reads it every `every` steps,
as PyTorch's performance tuning guide advises ("avoid unnecessary CPU-GPU synchronization").

  fix_torch_item_interval.py [--fixed] [steps=200] [every=20]
Prints "# loop: X ms" on stderr (the loop, up to the last step's completion; the warm-up step and
the model's set-up are outside it).
"""
import sys
import time

import torch

from fix_torch_setup import print_loop_time, training, variant

fixed, args = variant(sys.argv)
steps = int(args[0]) if len(args) > 0 else 200
every = int(args[1]) if len(args) > 1 else 20

model, opt, data, target, loss_fn = training()
running = 0.0
running_gpu = torch.zeros((), device="cuda")
loss_fn(model(data), target).backward()  # warm-up: kernels loaded, cuBLAS handle made
opt.zero_grad(set_to_none=True)
torch.cuda.synchronize()
t0 = time.perf_counter()
for step in range(steps):
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(data), target)
    loss.backward()
    opt.step()
    if fixed:
        running_gpu += loss.detach()
        if (step + 1) % every == 0:
            running += running_gpu.item()
            running_gpu.zero_()
    else:
        running += loss.item()
running += running_gpu.item()
torch.cuda.synchronize()
print_loop_time(t0)
print(f"{steps} steps: finite loss: {running == running}")
