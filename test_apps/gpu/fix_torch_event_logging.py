#!/usr/bin/env python3
"""Fix pair (test_apps/apps/fix_pairs.py): a training loop that logs its loss every step. Flagged:
`loss.item()` each step (hidden-sync: the host waits for the step, then the GPU stands idle while
Python prepares the next one). Fixed: each loss is copied with `non_blocking=True` into pinned host
memory and a `torch.cuda.Event` recorded after the copy; a logged value is read once its event has
completed (`event.query()`), so the host never waits: the pattern of PyTorch's tutorial "A guide on
good usage of non_blocking and pin_memory()" (a device-to-host copy with non_blocking=True is safe to
read after an event or synchronize) and its performance tuning guide ("avoid unnecessary CPU-GPU
synchronization").

  fix_torch_event_logging.py [--fixed] [steps=200]
Prints "# loop: X ms" on stderr (the loop, up to the last step's completion).
"""
import collections
import sys
import time

import torch

from fix_torch_setup import print_loop_time, training, variant

fixed, args = variant(sys.argv)
steps = int(args[0]) if len(args) > 0 else 200

model, opt, data, target, loss_fn = training()


def step():
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(data), target)
    loss.backward()
    opt.step()
    return loss.detach()


step()  # warm-up: kernels loaded, cuBLAS handle made
torch.cuda.synchronize()
log = []
losses = torch.empty(steps, pin_memory=True)  # the logged values, on the host
pending = collections.deque()
t0 = time.perf_counter()
for i in range(steps):
    loss = step()
    if fixed:
        losses[i].copy_(loss, non_blocking=True)
        done = torch.cuda.Event()
        done.record()
        pending.append((i, done))
        while pending and pending[0][1].query():
            j, _ = pending.popleft()
            log.append((j, losses[j].item()))  # a host tensor whose copy completed: no wait
    else:
        log.append((i, loss.item()))
torch.cuda.synchronize()
print_loop_time(t0)
log.extend((j, losses[j].item()) for j, _ in pending)
ok = len(log) == steps and all(v == v for _, v in log)
print(f"{steps} steps, {len(log)} losses logged ({'events' if fixed else '.item()'}): {'ok' if ok else 'WRONG'}")
sys.exit(0 if ok else 1)
