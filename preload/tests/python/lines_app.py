"""Target of python_lines_test.py: CUDA calls (ctypes on the simulator's runtime; ctypes releases the
GIL during the call) at distinct, marked lines. Each marked line must be the call site of its own
finding. `python lines_app.py ITERATIONS KERNEL_MS`."""
import ctypes
import os
import sys
import threading

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "vendor", "site-packages"))
import fakeframework  # noqa: E402

NBYTES = 1 << 16


def copies(cuda, host, dev, ms):
    cuda.sleep_kernel(ms)
    fakeframework.check("copy", cuda.rt.cudaMemcpyAsync(ctypes.addressof(host), dev, NBYTES, 2, None))  # LINE:copy_a
    cuda.sleep_kernel(ms)
    fakeframework.check("copy", cuda.rt.cudaMemcpyAsync(ctypes.addressof(host), dev, NBYTES, 2, None))  # LINE:copy_b


def explicit_sync(cuda, ms):
    cuda.sleep_kernel(ms)
    fakeframework.check("sync", cuda.rt.cudaStreamSynchronize(None))  # LINE:explicit_sync


def hidden_sync(cuda, ms):
    cuda.sleep_kernel(ms)
    return cuda.value()  # LINE:hidden_sync


def deep_sync(cuda, ms):
    cuda.sleep_kernel(ms)
    return cuda.value_deep(40)  # LINE:deep_sync


def in_thread(cuda, host, dev, ms, n):
    fakeframework.check("cudaFree", cuda.rt.cudaFree(None))  # the runtime makes its context current here
    for _ in range(n):
        cuda.sleep_kernel(ms)
        fakeframework.check("copy", cuda.rt.cudaMemcpyAsync(ctypes.addressof(host), dev, NBYTES, 2, None))  # LINE:thread_copy


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    ms = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
    cuda = fakeframework.Cuda()
    dev = cuda.malloc(NBYTES)
    host = ctypes.create_string_buffer(NBYTES)
    for _ in range(n):
        copies(cuda, host, dev, ms)
        explicit_sync(cuda, ms)
        hidden_sync(cuda, ms)
        deep_sync(cuda, ms)
    t = threading.Thread(target=in_thread, args=(cuda, host, dev, ms, n))
    t.start()
    t.join()
    print("lines_app: done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
