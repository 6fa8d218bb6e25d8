"""Target of borrowed_test.py: CUDA calls made on a native worker thread without Python
(native_worker.c, a stand-in for XLA's threads) while the Python line that asked waits in ctypes
(GIL released), as jax.device_put / np.asarray(jax_array) do. Each marked line must be the call
site of its own finding, borrowed from this (the main) thread, while a second Python thread runs
bytecode throughout. `python borrowed_app.py WORKER.so ITERATIONS KERNEL_MS [exit-busy|attached|backward|callback|gil-flip]`;
with exit-busy, a daemon thread keeps the worker copying while the interpreter finalizes; with
attached, the worker first takes a Python thread state of its own and releases the GIL, as PyTorch's
autograd engine threads do (a thread with a state and no frames: its calls borrow the line too);
backward is attached with ITERATIONS steps of 1,000 copies each made by the worker while one line
waits, as loss.backward() waits for a step's kernels (no spinning thread); callback is attached, and
the worker calls back into Python that copies (as autograd's engine thread runs a compiled or
custom Function's backward): the framework's own code (fakeframework's copy_to_host) at the line
that waits, and the user's own function at its own line; gil-flip is attached, and the worker runs
the framework's Python that makes 1,000 copies a wait, every other one with the GIL held (the
worker itself takes and drops the GIL between its calls, as autograd's engine thread does in a
compiled backward)."""
import ctypes
import os
import sys
import threading

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "vendor", "site-packages"))
import fakeframework  # noqa: E402

NBYTES = 1 << 16
u64 = ctypes.c_uint64


def spin(stop):
    x = 0
    while not stop.is_set():
        x += 1  # runs bytecode, holding the GIL: must not take the attribution


def main():
    worker = ctypes.CDLL(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    ms = float(sys.argv[3]) if len(sys.argv) > 3 else 5.0
    exit_busy = len(sys.argv) > 4 and sys.argv[4] == "exit-busy"
    backward = len(sys.argv) > 4 and sys.argv[4] == "backward"
    callback = len(sys.argv) > 4 and sys.argv[4] == "callback"
    gil_flip = len(sys.argv) > 4 and sys.argv[4] == "gil-flip"
    attached = backward or callback or gil_flip or (len(sys.argv) > 4 and sys.argv[4] == "attached")
    worker.aw_worker_call.argtypes = [ctypes.c_void_p, u64, u64, u64, u64, u64]
    worker.aw_worker_call_repeat.argtypes = [ctypes.c_void_p, ctypes.c_int, u64, u64, u64, u64, u64]
    cuda = fakeframework.Cuda()
    dev = cuda.malloc(NBYTES)
    host = ctypes.create_string_buffer(NBYTES)
    copy = ctypes.cast(cuda.rt.cudaMemcpyAsync, ctypes.c_void_p)
    sync = ctypes.cast(cuda.rt.cudaStreamSynchronize, ctypes.c_void_p)
    free = ctypes.cast(cuda.rt.cudaFree, ctypes.c_void_p)
    h, d = ctypes.addressof(host), dev.value
    fakeframework.check("worker", worker.aw_worker_start())
    if attached:
        fakeframework.check("attach", worker.aw_worker_attach_python())
    fakeframework.check("cudaFree", worker.aw_worker_call(free, 0, 0, 0, 0, 0))  # the worker's context
    print(f"borrowed_app: main native id {threading.get_native_id()}", flush=True)
    if exit_busy:
        def keep_copying():
            while True:
                worker.aw_worker_call(copy, h, d, NBYTES, 2, 0)

        threading.Thread(target=keep_copying, daemon=True).start()
        print("borrowed_app: exiting while the worker copies", flush=True)
        return 0  # no aw_worker_stop: the worker is inside a copy while the interpreter finalizes
    if backward:
        for _ in range(n):
            fakeframework.check("copies", worker.aw_worker_call_repeat(copy, fakeframework.MANY, h, d, NBYTES, 2, 0))  # LINE:backward
        worker.aw_worker_stop()
        print("borrowed_app: done", flush=True)
        return 0
    if gil_flip:
        many = ctypes.CFUNCTYPE(ctypes.c_int, u64, u64, u64, u64, u64)(cuda.copy_to_host_many)
        for _ in range(n):
            fakeframework.check("many", worker.aw_worker_call(many, h, d, NBYTES, 2, 0))  # LINE:gil_flip
        worker.aw_worker_stop()
        print("borrowed_app: done", flush=True)
        return 0
    if callback:
        hook = ctypes.CFUNCTYPE(ctypes.c_int, u64, u64, u64, u64, u64)
        in_framework = hook(cuda.copy_to_host)

        def users_backward(host_, dev_, nbytes, kind, stream):
            return cuda.rt.cudaMemcpyAsync(host_, dev_, nbytes, kind, stream or None)  # LINE:own_copy

        in_users_code = hook(users_backward)

        def threads_work():
            cuda.copy_to_host(h, d, NBYTES, 2, 0)  # LINE:thread_copy

        for _ in range(n):  # a thread Python created: its own line, nothing borrowed
            t = threading.Thread(target=threads_work)
            t.start()
            t.join()
        for _ in range(n):
            fakeframework.check("callback", worker.aw_worker_call(in_framework, h, d, NBYTES, 2, 0))  # LINE:callback
            fakeframework.check("callback", worker.aw_worker_call(in_users_code, h, d, NBYTES, 2, 0))  # LINE:waits
        worker.aw_worker_stop()
        print("borrowed_app: done", flush=True)
        return 0
    stop = threading.Event()
    busy = threading.Thread(target=spin, args=(stop,))
    busy.start()
    try:
        for _ in range(n):
            cuda.sleep_kernel(ms)
            fakeframework.check("copy", worker.aw_worker_call(copy, h, d, NBYTES, 2, 0))  # LINE:copy_a
            cuda.sleep_kernel(ms)
            fakeframework.check("copy", worker.aw_worker_call(copy, h, d, NBYTES, 2, 0))  # LINE:copy_b
            cuda.sleep_kernel(ms)
            fakeframework.check("sync", worker.aw_worker_call(sync, 0, 0, 0, 0, 0))  # LINE:sync
    finally:
        stop.set()
        busy.join()
        worker.aw_worker_stop()
    print("borrowed_app: done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
