#!/usr/bin/env python3
"""Fix pair (test_apps/apps/fix_pairs.py): a round trip per step on a Numba stream (upload, download,
the stream's synchronize, then the host updates the array), as Numba's documentation writes it (CUDA
"Memory management": `cuda.stream()`, `copy_to_device(ary, stream=)`, `copy_to_host(ary, stream=)`,
pinned memory with `cuda.pinned_array`). No kernel: compiling one needs libNVVM, which a machine
with only the CUDA runtime wheels lacks. Flagged: the host array is an ordinary NumPy array
(pageable-async-copy: both copies staged, synchronous); fixed: the same data in
`cuda.pinned_array`. Both variants make both arrays.

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

n = mib * (1 << 20) // 4
pageable = np.zeros(n, dtype=np.float32)
pinned = cuda.pinned_array(n, dtype=np.float32)
pinned[:] = 0
host = pinned if fixed else pageable
stream = cuda.stream()
d = cuda.device_array(n, dtype=np.float32, stream=stream)
d.copy_to_device(host, stream=stream)  # warm-up: the context and the stream's first copies
stream.synchronize()
t0 = time.perf_counter()
for _ in range(steps):
    d.copy_to_device(host, stream=stream)
    d.copy_to_host(host, stream=stream)
    stream.synchronize()
    host += 1.0
print(f"# loop: {(time.perf_counter() - t0) * 1e3:.3f} ms", file=sys.stderr)
ok = bool(host[0] == steps and host[-1] == steps)
print(f"{steps} round trips of {mib} MiB ({'pinned' if fixed else 'pageable'}): {'ok' if ok else 'WRONG'}")
sys.exit(0 if ok else 1)
