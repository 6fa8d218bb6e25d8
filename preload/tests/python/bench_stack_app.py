"""Target of run_stack_callgrind.sh: N pageable device-to-host cudaMemcpyAsync calls (each gets a
stack under the default policy) from one line, DEPTH Python frames deep, on the simulator.

    python bench_stack_app.py N DEPTH"""
import ctypes
import os
import sys

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

    def loop():
        for _ in range(n):
            copy(addr, dev, 64, 2, None)

    nest(depth - 2, loop)  # main + nest frames + loop = DEPTH (with the module frame)
    return 0


if __name__ == "__main__":
    sys.exit(main())
