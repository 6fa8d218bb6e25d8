#!/usr/bin/env python3
"""Fix pair (test_apps/apps/fix_pairs.py): uploads of a NumPy array to a CuPy array on a stream,
each followed by a kernel and the stream's synchronize, as CuPy's documentation writes them
(User Guide, "Memory Management": pinned memory; `cupyx.empty_pinned`, `ndarray.set(arr, stream)`).
Flagged: the source is an ordinary NumPy array (pageable-async-copy, staged); fixed: the same data in
an array from `cupyx.empty_pinned`. Both variants make both arrays.

  fix_cupy_pinned.py [--fixed] [steps=8] [MiB=256]
Prints "# loop: X ms" on stderr (the loop only: what the two variants do differently).
"""
import sys
import time

import cupy as cp
import cupyx
import numpy as np

fixed = len(sys.argv) > 1 and sys.argv[1] == "--fixed"
args = sys.argv[2:] if fixed else sys.argv[1:]
steps = int(args[0]) if len(args) > 0 else 8
mib = int(args[1]) if len(args) > 1 else 256

n = mib * (1 << 20) // 4
pageable = np.random.default_rng(0).random(n, dtype=np.float32)
pinned = cupyx.empty_pinned(pageable.shape, dtype=pageable.dtype)
pinned[...] = pageable
src = pinned if fixed else pageable
stream = cp.cuda.Stream(non_blocking=True)
dst = cp.empty(n, dtype=cp.float32)
with stream:
    out = cp.sqrt(dst)  # warm-up: the kernel compiled and loaded
stream.synchronize()
t0 = time.perf_counter()
for _ in range(steps):
    dst.set(src, stream=stream)
    with stream:
        cp.sqrt(dst, out=out)
    stream.synchronize()
print(f"# loop: {(time.perf_counter() - t0) * 1e3:.3f} ms", file=sys.stderr)
ok = bool(abs(float(out[-1]) ** 2 - float(pageable[-1])) < 1e-4)
print(f"{steps} uploads of {mib} MiB ({'pinned' if fixed else 'pageable'}): {'ok' if ok else 'WRONG'}")
sys.exit(0 if ok else 1)
