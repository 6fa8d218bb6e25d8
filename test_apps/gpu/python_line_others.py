#!/usr/bin/env python3
"""The Python line of other frameworks than PyTorch, each op at its own line (marked `# OP:name`), ITERATIONS times after a
~2 ms kernel of the same framework where one is at hand: CuPy (cupy.asnumpy, cupy.asarray), Numba
(cuda.to_device on a stream), JAX (jax.device_put, np.asarray of a jax array, and a jitted step's
result waited for with block_until_ready, as JAX's docs write a timed loop). Run under asyncwatch.

    python python_line_others.py cupy|numba|jax [ITERATIONS]"""
import sys
import time

import numpy as np


def run_cupy(n):
    import cupy
    a = cupy.arange(1 << 20, dtype=cupy.float32)
    h = np.ones(1 << 20, dtype=np.float32)
    for _ in range(n):
        b = a * 2.0  # ~2 ms of elementwise kernels queued before the copies
        for _ in range(20):
            b = b * 1.0001
        cupy.asnumpy(b)  # OP:cupy_asnumpy
        cupy.asarray(h)  # OP:cupy_asarray
    cupy.cuda.runtime.deviceSynchronize()


def run_numba(n):
    from numba import cuda
    s = cuda.stream()
    h = np.ones(1 << 22, dtype=np.float32)
    for _ in range(n):
        cuda.to_device(h, stream=s)  # OP:numba_to_device
    s.synchronize()


def run_jax(n):
    import jax
    import jax.numpy as jnp
    x = np.ones((1 << 20,), dtype=np.float32)
    f = jax.jit(lambda v: (v * 1.0001).sum())
    y = jnp.ones((2048, 2048), dtype=jnp.float32)
    g = jax.jit(lambda m: m @ m)
    g(y).block_until_ready()
    w = jnp.ones((8192, 8192), dtype=jnp.float32)
    step = jax.jit(lambda m: (m @ m) * 1e-4)  # ~1 ms or more on an H100
    step(w).block_until_ready()  # compiled here, outside the loop
    for _ in range(n):
        d = jax.device_put(x)  # OP:jax_device_put
        z = g(y)
        np.asarray(z)  # OP:jax_asarray
        f(d).block_until_ready()
        step(w).block_until_ready()  # OP:jax_block_until_ready


def main():
    which = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    t0 = time.perf_counter()
    {"cupy": run_cupy, "numba": run_numba, "jax": run_jax}[which](n)
    print(f"{which}: {n} iterations in {(time.perf_counter() - t0) * 1e3:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
