#!/usr/bin/env python3
"""Fix pair (test_apps/apps/fix_pairs.py): a round trip per step on a Numba stream (upload, a
kernel, download, the stream's synchronize), as Numba's documentation writes it (CUDA "Memory
management": `cuda.stream()`, `copy_to_device(ary, stream=)`, `copy_to_host(ary, stream=)`,
pinned memory with `cuda.pinned_array`). Flagged: the host array is an ordinary NumPy array
(pageable-async-copy: the upload staged, the download waiting for the kernel); fixed: the same data
in `cuda.pinned_array`. Both variants make both arrays.

  fix_numba_pinned.py [--fixed] [steps=8] [MiB=64]
Prints "# loop: X ms" on stderr (the loop only).
"""
import sys
import time

import numpy as np
from numba import cuda

fixed = len(sys.argv) > 1 and sys.argv[1] == "--fixed"
args = sys.argv[2:] if fixed else sys.argv[1:]
steps = int(args[0]) if len(args) > 0 else 8
mib = int(args[1]) if len(args) > 1 else 64


@cuda.jit
def increment(a):
    i = cuda.grid(1)
    if i < a.size:
        a[i] += 1.0


n = mib * (1 << 20) // 4
pageable = np.zeros(n, dtype=np.float32)
pinned = cuda.pinned_array(n, dtype=np.float32)
pinned[:] = 0
host = pinned if fixed else pageable
stream = cuda.stream()
d = cuda.device_array(n, dtype=np.float32, stream=stream)
threads = 256
blocks = (n + threads - 1) // threads
increment[blocks, threads, stream](d)  # warm-up: compiled and loaded
stream.synchronize()
t0 = time.perf_counter()
for _ in range(steps):
    d.copy_to_device(host, stream=stream)
    increment[blocks, threads, stream](d)
    d.copy_to_host(host, stream=stream)
    stream.synchronize()
print(f"# loop: {(time.perf_counter() - t0) * 1e3:.3f} ms", file=sys.stderr)
ok = bool(host[0] == steps and host[-1] == steps)
print(f"{steps} round trips of {mib} MiB ({'pinned' if fixed else 'pageable'}): {'ok' if ok else 'WRONG'}")
sys.exit(0 if ok else 1)
