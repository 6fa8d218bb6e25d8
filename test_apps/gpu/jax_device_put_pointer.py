#!/usr/bin/env python3
"""Which host buffer does XLA copy from after jax.device_put(numpy_array)? Prints each array's data
pointer and size (XPTR / X2PTR lines); the trace's cuMemHostAlloc and cuMemcpyHtoDAsync_v2 records
(`asyncwatch dump`) then show whether the copies read the array itself (pageable) or a staging
buffer (pinned). Run under asyncwatch with XLA_PYTHON_CLIENT_PREALLOCATE=false; docs/validation.md,
2026-12-03."""
import sys, numpy as np
import jax, jax.numpy as jnp
x = np.ones((1 << 20,), dtype=np.float32)
print("XPTR", hex(x.ctypes.data), x.nbytes, flush=True)
f = jax.jit(lambda v: (v * 1.0001).sum())
f(jax.device_put(x)).block_until_ready()
for i in range(5):
    x2 = np.full((1 << 20,), float(i), dtype=np.float32)
    print("X2PTR", i, hex(x2.ctypes.data), x2.nbytes, flush=True)
    d = jax.device_put(x2)
    d.block_until_ready()
