"""CUDA from ctypes, for the Python package's tests: a device-to-host copy after a sleep kernel.

Uses the shared runtime (libcudart.so.13: cudaMalloc, cudaMemsetAsync, cudaMemcpyAsync, ...) and,
for the kernel, the driver (libcuda.so.1: a PTX sleep kernel that spins on %clock64, which the
simulator runs for cycles / 1.98 GHz and a real GPU for about as long). Under `asyncwatch run --sim`
or `pytest --asyncwatch-sim` both are the simulator's (LD_LIBRARY_PATH).

    python simcuda.py pageable|pinned [KERNEL_MS]
"""
from __future__ import annotations

import ctypes
import sys
import time

_PTX = b"""
.version 7.0
.target sm_50
.address_size 64
.visible .entry sleep_kernel(.param .u64 cycles)
{
  .reg .pred %p;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [cycles];
  mov.u64 %rd2, %clock64;
WAIT:
  mov.u64 %rd3, %clock64;
  sub.s64 %rd4, %rd3, %rd2;
  setp.lt.s64 %p, %rd4, %rd1;
  @%p bra WAIT;
  ret;
}
"""
_CLOCK_HZ = 1.98e9
_DEVICE_TO_HOST = 2  # cudaMemcpyDeviceToHost


class Cuda:
    def __init__(self) -> None:
        self.rt = ctypes.CDLL("libcudart.so.13")
        self.drv = ctypes.CDLL("libcuda.so.1")
        p, size, i, u = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_uint
        for lib, name, args in (
                (self.rt, "cudaFree", [p]), (self.rt, "cudaMalloc", [ctypes.POINTER(p), size]),
                (self.rt, "cudaMallocHost", [ctypes.POINTER(p), size]), (self.rt, "cudaFreeHost", [p]),
                (self.rt, "cudaMemsetAsync", [p, i, size, p]), (self.rt, "cudaMemcpyAsync", [p, p, size, i, p]),
                (self.rt, "cudaStreamSynchronize", [p]),
                (self.drv, "cuModuleLoadData", [ctypes.POINTER(p), ctypes.c_char_p]),
                (self.drv, "cuModuleGetFunction", [ctypes.POINTER(p), p, ctypes.c_char_p]),
                (self.drv, "cuLaunchKernel", [p, u, u, u, u, u, u, u, p, ctypes.POINTER(p), ctypes.POINTER(p)])):
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = args, ctypes.c_int
        self._check("cudaFree", self.rt.cudaFree(None))  # initializes the runtime and its context
        module = ctypes.c_void_p()
        self._check("cuModuleLoadData", self.drv.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(_PTX)))
        self.kernel = ctypes.c_void_p()
        self._check("cuModuleGetFunction",
                    self.drv.cuModuleGetFunction(ctypes.byref(self.kernel), module, b"sleep_kernel"))

    @staticmethod
    def _check(name: str, status: int) -> None:
        if status != 0:
            raise RuntimeError(f"{name} failed with status {status}")

    def sleep_kernel(self, ms: float) -> None:
        """Launches the sleep kernel on the legacy default stream."""
        cycles = ctypes.c_uint64(int(ms * 1e-3 * _CLOCK_HZ))
        params = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.byref(cycles), ctypes.c_void_p))
        self._check("cuLaunchKernel", self.drv.cuLaunchKernel(self.kernel, 1, 1, 1, 1, 1, 1, 0, None, params, None))

    def copy_after_kernel(self, kernel_ms: float, nbytes: int, pinned: bool) -> float:
        """Sleep kernel, memset of the device buffer to 0x5A, cudaMemcpyAsync to host memory (pageable:
        Python's own buffer; pinned: cudaMallocHost), synchronize. Checks the bytes arrived and
        returns how long the cudaMemcpyAsync call itself took, in seconds."""
        dev = ctypes.c_void_p()
        self._check("cudaMalloc", self.rt.cudaMalloc(ctypes.byref(dev), nbytes))
        pinned_ptr = ctypes.c_void_p()
        if pinned:
            self._check("cudaMallocHost", self.rt.cudaMallocHost(ctypes.byref(pinned_ptr), nbytes))
            host = (ctypes.c_char * nbytes).from_address(pinned_ptr.value)
        else:
            host = ctypes.create_string_buffer(nbytes)
        try:
            self.sleep_kernel(kernel_ms)
            self._check("cudaMemsetAsync", self.rt.cudaMemsetAsync(dev, 0x5A, nbytes, None))
            start = time.perf_counter()
            self._check("cudaMemcpyAsync", self.rt.cudaMemcpyAsync(ctypes.addressof(host), dev, nbytes,
                                                                   _DEVICE_TO_HOST, None))
            took = time.perf_counter() - start
            self._check("cudaStreamSynchronize", self.rt.cudaStreamSynchronize(None))
            if bytes(host[:nbytes]) != b"\x5a" * nbytes:
                raise RuntimeError("the copied bytes are wrong")
            return took
        finally:
            if pinned:
                self._check("cudaFreeHost", self.rt.cudaFreeHost(pinned_ptr))
            self._check("cudaFree", self.rt.cudaFree(dev))


def main(argv: list) -> int:
    kind = argv[1] if len(argv) > 1 else "pageable"
    ms = float(argv[2]) if len(argv) > 2 else 50.0
    took = Cuda().copy_after_kernel(ms, 1 << 20, pinned=(kind == "pinned"))
    print(f"{kind} device-to-host cudaMemcpyAsync after a {ms:g} ms kernel: the call took {took * 1e3:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
