"""A program that brings NVIDIA's own libcudart.so (as PyTorch wheels do) and calls cudaMalloc: under
`asyncwatch run --sim` that runtime cannot start (test cli.run-sim-bundled-runtime).
usage: bundled_runtime.py /path/to/libcudart.so.13"""
import ctypes
import sys

runtime = ctypes.CDLL(sys.argv[1])
ptr = ctypes.c_void_p()
print("cudaMalloc:", runtime.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(16)))
