"""The same copies done right: to pinned memory, or to pageable memory while recording is paused
(asyncwatch.paused()). Under `pytest --asyncwatch-sim --asyncwatch-fail-on pageable-async-copy` it
must pass (test_plugin.py)."""
import asyncwatch
import simcuda


def test_copy_to_pinned_memory_after_a_kernel() -> None:
    simcuda.Cuda().copy_after_kernel(kernel_ms=50, nbytes=1 << 20, pinned=True)


def test_pageable_copy_while_recording_is_paused() -> None:
    assert asyncwatch.active()
    cuda = simcuda.Cuda()
    with asyncwatch.paused():
        cuda.copy_after_kernel(kernel_ms=50, nbytes=1 << 20, pinned=False)
    assert asyncwatch.recording(True) is True  # paused() restored recording
