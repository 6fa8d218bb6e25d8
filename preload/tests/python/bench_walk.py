"""Cost of a walk: usage: python3.X bench_walk.py HELPER.so [ITERATIONS] [DEPTHS...]

For each depth (Python frames on the stack at the call, this script's included), calls the helper
once (GIL released) to run ITERATIONS walks in a row with capture() (plain loads: the first walk of
the thread state was done by a warm-up call) and with capture_checked() (every read through
process_vm_readv), and prints ns per walk and per frame; then the cost of describing a code
object (describe_code, as a trace writer would call it) and of locating an instruction's line;
then, per depth, a borrowed walk (capture_borrowed on a native thread without Python, reading
this waiting thread's frames: always through process_vm_readv) and the confirmation of an
unchanged walk (confirm_borrowed), alone and with 3 more Python threads waiting in time.sleep
(whose states it looks at too).
Wall-clock figures: for instructions per walk run it under callgrind (run_callgrind.sh, which
sets AW_BENCH_NO_CHECKED=1).
"""
import os
import ctypes
import sys

lib = ctypes.CDLL(sys.argv[1])
lib.aw_bench.restype = ctypes.c_longlong
lib.aw_bench.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
lib.aw_bench_describe.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_longlong)]
lib.aw_bench_borrowed.restype = ctypes.c_longlong
lib.aw_bench_borrowed.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
ITERATIONS = int(sys.argv[2]) if len(sys.argv) > 2 else 200000
DEPTHS = [int(d) for d in sys.argv[3:]] or [10, 50]


def here():
    f, n = sys._getframe(), 0
    while f is not None:
        f, n = f.f_back, n + 1
    return n


def at_depth(depth, mode, iterations):
    if here() - 1 < depth:  # here() counts its own frame
        return at_depth(depth, mode, iterations)
    if mode == "describe":
        ns = (ctypes.c_longlong * 2)()
        return ns, lib.aw_bench_describe(iterations, 64, ns)
    frames = ctypes.c_int()
    if mode in ("borrowed", "confirmed"):
        return lib.aw_bench_borrowed(iterations, 32, ctypes.byref(frames), mode == "confirmed"), frames.value
    ns = lib.aw_bench(iterations, 64, mode, ctypes.byref(frames))
    return ns, frames.value


def main():
    print(f"CPython {sys.version.split()[0]}, {ITERATIONS} walks per figure (checked: {ITERATIONS // 100})")
    for depth in DEPTHS:
        at_depth(depth, 0, 10)  # the first walk of this thread state is a checked one
        ns, frames = at_depth(depth, 0, ITERATIONS)
        if frames != min(depth, 64):
            print(f"FAIL: depth {depth}: the walks found {frames} frames")
            sys.exit(1)
        per = ns / ITERATIONS
        line = f"{depth:3d} frames: capture {per:8.1f} ns/walk ({per / frames:5.1f} ns/frame)"
        if not os.environ.get("AW_BENCH_NO_CHECKED"):
            checked_ns, _ = at_depth(depth, 1, max(1, ITERATIONS // 100))
            line += f", capture_checked {checked_ns / max(1, ITERATIONS // 100) / 1000:8.1f} us/walk"
        print(line, flush=True)
    # Off the hot path, once per code object: describe_code (sizes, then copy) and locate.
    rounds = max(1, ITERATIONS // 100)
    ns, frames = at_depth(DEPTHS[0], "describe", rounds)
    if frames <= 0:
        print(f"FAIL: describe_code failed ({frames})")
        sys.exit(1)
    print(f"describe_code (sizes, then copy) {ns[0] / (rounds * frames):7.1f} ns/code object, "
          f"locate {ns[1] / (rounds * frames):7.1f} ns/frame ({frames} frames, {rounds} rounds)", flush=True)
    # Borrowed walks (at most 32 frames, as the preload library asks for).
    import threading
    import time
    borrowed = max(1, ITERATIONS // 100)
    stop = threading.Event()
    sleepers = []
    for extra in (0, 3):
        while len(sleepers) < extra:
            sleepers.append(threading.Thread(target=stop.wait))
            sleepers[-1].start()
        time.sleep(0.01)
        for depth in DEPTHS:
            ns, frames = at_depth(depth, "borrowed", borrowed)
            if frames != min(depth, 32):
                stop.set()
                print(f"FAIL: borrowed walk at depth {depth}: {frames} frames")
                sys.exit(1)
            cns, cframes = at_depth(depth, "confirmed", borrowed)
            if cframes != frames:
                stop.set()
                print(f"FAIL: confirmed walk at depth {depth}: {cframes} frames, the walk found {frames}")
                sys.exit(1)
            print(f"{depth:3d} frames, {1 + extra} Python threads: capture_borrowed {ns / borrowed / 1000:7.1f} us/walk, "
                  f"confirm_borrowed {cns / borrowed / 1000:7.1f} us ({frames} frames, {borrowed} walks)", flush=True)
    stop.set()
    for t in sleepers:
        t.join()


main()
