#!/usr/bin/env python3
"""Pageable copies through the CUDA driver API from Python (run under LD_PRELOAD=libasyncwatch.so
on the H200). Sections, each skipped with a message when its module is missing:
  cupy-driver: CuPy's RawKernel sleep kernel (cuModuleLoadData + cuLaunchKernel through CuPy), then a
               pageable device-to-host copy with cuMemcpyDtoHAsync called through ctypes on the
               libcuda.so.1 that CuPy already loaded (CuPy's own copies use the runtime API)
  cupy-runtime: cupy.asnumpy(a, stream=s) into pageable memory after the sleep kernel (runtime API)
  numba: numba.cuda.to_device / copy_to_host with a stream (numba-cuda uses the driver API)
Prints "<section> <what>: <ms> ms" per copy; exit 0 when every section that ran had correct data.
"""
import ctypes
import sys
import time

CYCLES = 100_000_000  # ~50 ms at 1.98 GHz
N = 16 << 20  # bytes
SLEEP_SRC = r'''
extern "C" __global__ void sleep_kernel(long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) { }
}
'''
ok = True


def ms_since(t0):
    return (time.perf_counter() - t0) * 1e3


def section_cupy():
    global ok
    try:
        import cupy
        import numpy as np
    except ImportError as e:
        print(f"cupy: skipped ({e})")
        return
    s = cupy.cuda.Stream(non_blocking=True)
    k = cupy.RawKernel(SLEEP_SRC, "sleep_kernel")
    a = cupy.arange(N, dtype=cupy.uint8)
    k((1,), (1,), (np.int64(1000),), stream=s)  # load the module
    s.synchronize()
    # driver API copy into pageable memory after the sleep kernel
    libcuda = ctypes.CDLL("libcuda.so.1")
    dtoh = libcuda.cuMemcpyDtoHAsync_v2
    dtoh.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t, ctypes.c_void_p]
    dtoh.restype = ctypes.c_int
    host = np.zeros(N, dtype=np.uint8)  # pageable
    k((1,), (1,), (np.int64(CYCLES),), stream=s)
    t0 = time.perf_counter()
    r = dtoh(host.ctypes.data, a.data.ptr, N, s.ptr)
    print(f"cupy-driver pageable cuMemcpyDtoHAsync after a 50 ms kernel: {ms_since(t0):.3f} ms (CUresult {r})")
    good = r == 0 and host[255] == 255 and host[N - 1] == (N - 1) % 256
    s.synchronize()
    # runtime path as CuPy users write it
    host2 = np.zeros(N, dtype=np.uint8)
    k((1,), (1,), (np.int64(CYCLES),), stream=s)
    t0 = time.perf_counter()
    try:  # CuPy >= 13: blocking=False, else asnumpy synchronizes the stream itself
        b = cupy.asnumpy(a, stream=s, out=host2, blocking=False)
    except TypeError:
        b = cupy.asnumpy(a, stream=s, out=host2)
    print(f"cupy-runtime pageable cupy.asnumpy(stream=s) after a 50 ms kernel: {ms_since(t0):.3f} ms")
    s.synchronize()
    good = good and b[N - 1] == (N - 1) % 256
    # pageable host -> device
    src = np.full(N, 7, dtype=np.uint8)
    t0 = time.perf_counter()
    d = cupy.empty(N, dtype=cupy.uint8)
    d.set(src, stream=s)
    print(f"cupy-runtime pageable ndarray.set(stream=s) H2D: {ms_since(t0):.3f} ms")
    s.synchronize()
    good = good and int(d[N - 1]) == 7
    print(f"cupy {cupy.__version__}: data {'ok' if good else 'WRONG'}")
    ok = ok and good


def section_numba():
    global ok
    try:
        import numpy as np
        from numba import cuda
    except ImportError as e:
        print(f"numba: skipped ({e})")
        return
    try:
        s = cuda.stream()
        src = np.arange(N, dtype=np.uint8)
        t0 = time.perf_counter()
        d = cuda.to_device(src, stream=s)
        print(f"numba pageable to_device(stream=s) H2D: {ms_since(t0):.3f} ms")
        t0 = time.perf_counter()
        h = d.copy_to_host(stream=s)
        print(f"numba pageable copy_to_host(stream=s) D2H: {ms_since(t0):.3f} ms")
        s.synchronize()
        good = h[N - 1] == (N - 1) % 256
        print(f"numba: data {'ok' if good else 'WRONG'}")
        ok = ok and good
    except Exception as e:  # numba-cuda configuration problems are reported, not fatal
        print(f"numba: skipped ({type(e).__name__}: {e})")


section_cupy()
section_numba()
sys.exit(0 if ok else 1)
