"""One test with a pageable copy after a kernel between two clean ones: under
`pytest --asyncwatch-sim --asyncwatch-fail-on pageable-async-copy --asyncwatch-per-test` exactly the
middle test must fail (test_plugin.py)."""
import simcuda

_cuda = None


def cuda() -> simcuda.Cuda:
    global _cuda
    if _cuda is None:
        _cuda = simcuda.Cuda()
    return _cuda


def test_first_pinned_copy() -> None:
    cuda().copy_after_kernel(kernel_ms=20, nbytes=1 << 20, pinned=True)


def test_pageable_copy() -> None:
    cuda().copy_after_kernel(kernel_ms=20, nbytes=1 << 20, pinned=False)


def test_second_pinned_copy() -> None:
    cuda().copy_after_kernel(kernel_ms=20, nbytes=1 << 20, pinned=True)
