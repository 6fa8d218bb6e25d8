"""Target of run_stack_callgrind.sh: N pageable device-to-host cudaMemcpyAsync calls (each gets a
stack under the default policy) from one line, DEPTH Python frames deep, on the simulator. With
WORKER.so (native_worker.c) the copies run on its native thread without Python while this line
waits (their stacks get borrowed frames), and the wall time per call is printed.

    python bench_stack_app.py N DEPTH [WORKER.so]"""
import ctypes
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "vendor", "site-packages"))
import fakeframework  # noqa: E402


def nest(depth, fn):
    return fn() if depth <= 1 else nest(depth - 1, fn)


def main():
    n, depth = int(sys.argv[1]), int(sys.argv[2])
    cuda = fakeframework.Cuda()
    dev = cuda.malloc(64)
    host = ctypes.create_string_buffer(64)
    copy = cuda.rt.cudaMemcpyAsync
    addr = ctypes.addressof(host)

    worker = ctypes.CDLL(sys.argv[3]) if len(sys.argv) > 3 else None
    if worker:
        u64 = ctypes.c_uint64
        worker.aw_worker_call.argtypes = [ctypes.c_void_p, u64, u64, u64, u64, u64]
        fn, d = ctypes.cast(copy, ctypes.c_void_p), dev.value
        fakeframework.check("worker", worker.aw_worker_start())
        worker.aw_worker_call(ctypes.cast(cuda.rt.cudaFree, ctypes.c_void_p), 0, 0, 0, 0, 0)

    def loop():
        if worker:
            t0 = time.perf_counter()
            for _ in range(n):
                worker.aw_worker_call(fn, addr, d, 64, 2, 0)
            print(f"bench_stack_app: {n} copies on the worker, {(time.perf_counter() - t0) / n * 1e6:.1f} us a call")
            return
        for _ in range(n):
            copy(addr, dev, 64, 2, None)

    nest(depth - 2, loop)  # main + nest frames + loop = DEPTH (with the module frame)
    if worker:
        worker.aw_worker_stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
