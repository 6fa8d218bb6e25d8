#!/usr/bin/env python3
"""When does the work of jax.device_put happen? The loop of python_line_others.py's JAX case, with
CLOCK_MONOTONIC times (the clock of asyncwatch's records) around each line, printed as one line per
iteration, so that a trace of the same run shows which of them XLA's threads' CUDA calls fall in.

    python jax_device_put_timing.py [ITERATIONS=20]"""
import sys
import time

import numpy as np


def main():
    import jax
    import jax.numpy as jnp
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    x = np.ones((1 << 20,), dtype=np.float32)
    f = jax.jit(lambda v: (v * 1.0001).sum())
    y = jnp.ones((2048, 2048), dtype=jnp.float32)
    g = jax.jit(lambda m: m @ m)
    g(y).block_until_ready()
    f(jax.device_put(x)).block_until_ready()
    ns = time.monotonic_ns
    for i in range(n):
        t0 = ns()
        d = jax.device_put(x)
        t1 = ns()
        z = g(y)
        t2 = ns()
        np.asarray(z)
        t3 = ns()
        f(d).block_until_ready()
        t4 = ns()
        print(f"iter={i} device_put={t0}+{t1 - t0} dispatch={t1}+{t2 - t1} asarray={t2}+{t3 - t2} "
              f"block={t3}+{t4 - t3}", flush=True)
    # device_put alone, then its transfer waited for at once
    for i in range(5):
        t0 = ns()
        d = jax.device_put(x)
        t1 = ns()
        d.block_until_ready()
        t2 = ns()
        print(f"alone={i} device_put={t0}+{t1 - t0} block={t1}+{t2 - t1}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
