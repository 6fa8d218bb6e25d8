"""Walks while other threads run Python constantly: usage: python3.X stress_test.py HELPER.so [SECONDS]

Busy threads recurse, raise, make generators and short-lived threads (thread states created and
freed) and collect garbage, all the time; walker threads call the helper (GIL released) which walks
its own frames hundreds of times per call and checks each walk equals the first, then resolves
them: each walk must show exactly the walker's frames, never a busy thread's. New threads walk
once each (the first walk of a thread state). Exit 1 on any wrong walk.
"""
import ctypes
import gc
import os
import random
import sys
import threading
import time

lib = ctypes.CDLL(sys.argv[1])
lib.aw_walk.argtypes = [ctypes.POINTER(ctypes.c_char), ctypes.c_int, ctypes.c_int, ctypes.c_int,
                        ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)]
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
stop = threading.Event()
errors = []
counts = {"walks": 0, "repeat_walks": 0, "new_thread_walks": 0, "busy_ops": 0}
lock = threading.Lock()


def busy_recurse(n):
    if n == 0:
        try:
            raise ValueError("x")
        except ValueError:
            return [i * i for i in range(20)]
    return busy_recurse(n - 1)


def busy_generator():
    for i in range(50):
        yield busy_recurse(i % 7)


def busy_loop():
    ops = 0
    while not stop.is_set():
        busy_recurse(random.randrange(60))
        for _ in busy_generator():
            pass
        if ops % 50 == 0:
            gc.collect()
        ops += 1
    with lock:
        counts["busy_ops"] += ops


def walk_and_check(buf, end, used, where):
    n = lib.aw_walk(buf, len(buf), 64, 0, end, used)
    if n <= 0:
        errors.append(f"{where}: walk returned {n} (end {end.value})")
        return
    records = buf.raw[:used.value].split(b"\x1e")[:n]
    names = [r.split(b"\x1f")[1].decode() for r in records]
    if names[:2] != ["walk_and_check", where]:
        errors.append(f"{where}: innermost frames {names[:2]}")
    if any(name.startswith("busy_") for name in names):
        errors.append(f"{where}: another thread's frame in {names}")


def walker_inner(buf, end, used):
    differ = lib.aw_walk_repeat(300, 64)
    if differ != 0:
        errors.append(f"walker: {differ} of 300 walks differed from the first")
    walk_and_check(buf, end, used, "walker_inner")


def walker_outer():
    buf = ctypes.create_string_buffer(1 << 16)
    end, used = ctypes.c_int(), ctypes.c_int()
    walks = 0
    while not stop.is_set():
        walker_inner(buf, end, used)
        walks += 1
    with lock:
        counts["walks"] += walks
        counts["repeat_walks"] += walks * 300


def short_lived():
    buf = ctypes.create_string_buffer(1 << 16)
    end, used = ctypes.c_int(), ctypes.c_int()
    walk_and_check(buf, end, used, "short_lived")


def thread_churn():
    made = 0
    while not stop.is_set():
        threads = [threading.Thread(target=short_lived) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        made += 4
    with lock:
        counts["new_thread_walks"] += made


def main():
    # The search first, as the preload library makes it at trace open: a walk made while another
    # thread searches finds nothing rather than wait, which is not what this test checks. The
    # first walks (checked reads, the layout not yet proven) are still made by all threads at once.
    if lib.aw_find_interpreter() != 3:
        print("FAIL: no interpreter found")
        sys.exit(1)
    sys.setswitchinterval(0.0005)  # switch the GIL often
    threads = [threading.Thread(target=busy_loop) for _ in range(3)]
    threads += [threading.Thread(target=walker_outer) for _ in range(2)]
    threads += [threading.Thread(target=thread_churn)]
    for t in threads:
        t.start()
    time.sleep(SECONDS)
    stop.set()
    for t in threads:
        t.join()
    if errors:
        status = ctypes.create_string_buffer(1024)
        lib.aw_status(status, len(status))
        print("FAIL:", *errors[:10], f"status: {status.value.decode()}", sep="\n  ")
        sys.exit(1)
    if counts["walks"] == 0 or counts["new_thread_walks"] == 0 or counts["busy_ops"] == 0:
        print(f"FAIL: nothing ran: {counts}")
        sys.exit(1)
    print(f"ok: {counts['walks']} verified walks + {counts['repeat_walks']} repeated walks on 2 threads, "
          f"{counts['new_thread_walks']} first walks on new threads, while 3 threads ran "
          f"{counts['busy_ops']} busy loops")


main()
