"""A session whose CUDA call fails for want of a driver: NVIDIA's libcudart.so.13 (not the
simulator's) on a machine without a GPU. Under `pytest --asyncwatch --asyncwatch-fail-on warning`
the session must fail (no CUDA call succeeded: an empty report passes no gate); test_plugin.py."""
import ctypes


def test_cuda_malloc_without_a_driver() -> None:
    runtime = ctypes.CDLL("libcudart.so.13")
    ptr = ctypes.c_void_p()
    assert runtime.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(16)) != 0  # 35: insufficient driver
