"""A test session with a pageable device-to-host cudaMemcpyAsync after a kernel: under
`pytest --asyncwatch-sim --asyncwatch-fail-on pageable-async-copy` it must fail (test_plugin.py)."""
import simcuda


def test_copy_to_pageable_memory_after_a_kernel() -> None:
    simcuda.Cuda().copy_after_kernel(kernel_ms=50, nbytes=1 << 20, pinned=False)
