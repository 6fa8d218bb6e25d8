"""Walks while the interpreter shuts down: usage: python3.X shutdown_test.py HELPER.so [RUNS]

Runs itself RUNS times as a child in which daemon threads walk without pause (GIL released)
while the main thread returns and the interpreter finalizes (freeing the daemon threads' states),
a native thread borrows their frames without pause (capture_borrowed), and an atexit handler walks
too. Each child must exit 0, not die of a signal, and its atexit walk
must find the handler's frame at its line.
"""
import atexit
import ctypes
import subprocess
import sys
import threading
import time


def child(helper):
    lib = ctypes.CDLL(helper)
    lib.aw_walk.argtypes = [ctypes.POINTER(ctypes.c_char), ctypes.c_int, ctypes.c_int, ctypes.c_int,
                            ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)]

    def daemon():
        while True:
            lib.aw_walk_repeat(2000, 64)

    def at_exit():
        buf, end, used = ctypes.create_string_buffer(1 << 16), ctypes.c_int(), ctypes.c_int()
        n = lib.aw_walk(buf, len(buf), 64, 0, end, used)  # @at_exit
        names = [r.split(b"\x1f")[1] for r in buf.raw[:used.value].split(b"\x1e")[:max(n, 0)]]
        lines = [int(r.split(b"\x1f")[2]) for r in buf.raw[:used.value].split(b"\x1e")[:max(n, 0)]]
        if n < 1 or not names[0].endswith(b"at_exit") or lines[0] != AT_EXIT_LINE:
            print(f"FAIL: the atexit walk found {n} frames: {names} {lines}", flush=True)
            sys.stdout.flush()
            import os
            os._exit(3)

    atexit.register(at_exit)
    for _ in range(4):
        threading.Thread(target=daemon, daemon=True).start()
    if lib.aw_borrow_forever() != 0:  # a native thread lent the others' frames meanwhile
        print("FAIL: no native thread", flush=True)
        sys.exit(4)
    time.sleep(0.05)


with open(__file__, encoding="utf-8") as source:
    AT_EXIT_LINE = next(i for i, line in enumerate(source, 1) if line.rstrip().endswith("# @at_exit"))

if len(sys.argv) > 2 and sys.argv[2] == "child":
    child(sys.argv[1])
else:
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    for run in range(runs):
        r = subprocess.run([sys.executable, __file__, sys.argv[1], "child"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=120)
        if r.returncode != 0:
            print(f"FAIL: run {run}: exit status {r.returncode}\n{r.stdout.decode(errors='replace')}")
            sys.exit(1)
    print(f"ok: {runs} interpreters finalized while 4 daemon threads walked and a native thread borrowed; "
          "each atexit walk found its line")
