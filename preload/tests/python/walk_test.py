"""python_frames on a real interpreter: usage: python3.X walk_test.py HELPER.so

Each case calls the helper (ctypes releases the GIL) from Python code and compares the frames the
walker found, resolved without the GIL, with two references: the interpreter's own view of the same
stack (sys._getframe(), taken on the same line right after the call), and the source: a line
marked "# @name" is where the frame of that name must be. Prints one line per case; exit 1 on the
first difference.
"""
import asyncio
import ctypes
import os
import sys
import threading

lib = ctypes.CDLL(sys.argv[1])
W = lib.aw_walk
W.argtypes = [ctypes.POINTER(ctypes.c_char), ctypes.c_int, ctypes.c_int, ctypes.c_int,
              ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)]
B = ctypes.create_string_buffer(1 << 20)
C = len(B)
E = ctypes.c_int()
U = ctypes.c_int()
N = 64  # frames asked for
M = 0   # 0: capture (plain loads after the first walk), 1: capture_checked, 2 and 3: the same keeping 8 outermost

NO_PYTHON, NO_THREAD_STATE, COMPLETE, DEPTH_LIMIT, INVALID, ELIDED = range(6)
END_NAMES = ["no-python", "no-thread-state", "complete", "depth-limit", "invalid", "elided"]

MARK = {}
with open(__file__, encoding="utf-8") as source:
    for number, text in enumerate(source, 1):
        if "# @" in text:
            MARK[text.rsplit("# @", 1)[1].strip()] = number

HAS_QUALNAME = sys.version_info >= (3, 11)


def expected(frame):
    out = []
    while frame is not None:
        co = frame.f_code
        line = frame.f_lineno
        out.append((os.fsencode(co.co_filename), co.co_qualname if HAS_QUALNAME else co.co_name,
                    -1 if line is None else line, co.co_firstlineno))
        frame = frame.f_back
    return out


def parse(n, buf, used):
    got = []
    for record in buf.raw[:used.value].split(b"\x1e")[:n]:
        filename, qualname, line, column, first, instr = record.split(b"\x1f")
        got.append((filename, qualname.decode("utf-8"), int(line), int(first)))
    return got


def fail(case, why):
    print(f"FAIL {case}: {why}", flush=True)
    sys.exit(1)


def check(case, n, exp, marks=(), max_frames=None, buf=None, used=None, end=None):
    """Compares a walk with the interpreter's view; marks: markers of the innermost frames."""
    max_frames = N if max_frames is None else max_frames
    if n < 0:
        fail(case, f"frame {-n - 1} could not be described")
    got = parse(n, buf or B, used or U)
    want = exp[:max_frames]
    if len(got) != len(want):
        fail(case, f"{len(got)} frames, expected {len(want)}:\n  got  {got}\n  want {want}")
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            fail(case, f"frame {i}: got {g}, expected {w}")
    for i, mark in enumerate(marks):
        if got[i][2] != MARK[mark]:
            fail(case, f"frame {i} at line {got[i][2]}, the source marks {mark} at {MARK[mark]}")
    end = (end or E).value
    if len(exp) < max_frames and end != COMPLETE:
        fail(case, f"walk ended with {END_NAMES[end]}, expected complete")
    if len(exp) > max_frames and end != DEPTH_LIMIT:
        fail(case, f"walk ended with {END_NAMES[end]}, expected depth-limit")
    print(f"ok {case}: {len(got)} frames, innermost {got[0][1]} line {got[0][2]}" if got else f"ok {case}",
          flush=True)
    return got


# --- the cases ---------------------------------------------------------------------------------

def nested3():
    return W(B, C, N, M, E, U), expected(sys._getframe())  # @nested3


def nested2():
    return nested3()  # @nested2


def nested1():
    return nested2()  # @nested1


def case_nested():
    n, exp = nested1()
    check("nested", n, exp, ["nested3", "nested2", "nested1"])


def case_distinct_lines():
    n1, exp1 = W(B, C, N, M, E, U), expected(sys._getframe())  # @distinct1
    got1 = check("distinct-lines-1", n1, exp1, ["distinct1"])
    n2, exp2 = W(B, C, N, M, E, U), expected(sys._getframe())  # @distinct2
    got2 = check("distinct-lines-2", n2, exp2, ["distinct2"])
    if got1[0][2] == got2[0][2]:
        fail("distinct-lines", "two lines gave the same line")


def case_checked_reads():
    # capture_checked (every read through process_vm_readv) finds the same frames.
    n, exp = W(B, C, N, 1, E, U), expected(sys._getframe())  # @checked
    check("checked-reads", n, exp, ["checked"])


class Holder:
    def method(self):
        return W(B, C, N, M, E, U), expected(sys._getframe())  # @method

    @staticmethod
    def static():
        return Holder().method()  # @static


def case_method_qualname():
    n, exp = Holder.static()
    got = check("method", n, exp, ["method", "static"])
    if HAS_QUALNAME and (got[0][1] != "Holder.method" or got[1][1] != "Holder.static"):
        fail("method", f"qualified names {got[0][1]}, {got[1][1]}")


def thread_inner(result):
    result.append((W(B2, C, N, M, E2, U2), expected(sys._getframe())))  # @thread_inner


def thread_outer(result):
    thread_inner(result)  # @thread_outer


B2 = ctypes.create_string_buffer(1 << 20)
E2 = ctypes.c_int()
U2 = ctypes.c_int()


def case_second_thread():
    result = []
    t = threading.Thread(target=thread_outer, args=(result,), name="second")
    t.start()
    t.join()
    n, exp = result[0]
    got = check("second-thread", n, exp, ["thread_inner", "thread_outer"], buf=B2, used=U2, end=E2)
    if not got[-1][0].endswith(b"threading.py"):
        fail("second-thread", f"outermost frame {got[-1]} is not threading's bootstrap")


def generator():
    yield W(B, C, N, M, E, U), expected(sys._getframe())  # @generator


def case_generator():
    n, exp = next(generator())  # @generator_caller
    check("generator", n, exp, ["generator", "generator_caller"])


async def coroutine_inner():
    return W(B, C, N, M, E, U), expected(sys._getframe())  # @coroutine_inner


async def coroutine_outer():
    return await coroutine_inner()  # @coroutine_outer


def case_coroutine():
    c = coroutine_outer()
    try:
        c.send(None)  # @coroutine_send
    except StopIteration as stop:
        n, exp = stop.value
    check("coroutine", n, exp, ["coroutine_inner", "coroutine_outer", "coroutine_send"])


def case_asyncio():
    async def main():
        await asyncio.sleep(0)
        return await coroutine_outer()  # @asyncio_main

    n, exp = asyncio.run(main())
    check("asyncio", n, exp, ["coroutine_inner", "coroutine_outer", "asyncio_main"], max_frames=N)


EXEC_SOURCE = "x = 1\n\nr = W(B, C, N, M, E, U), expected(sys._getframe())\n"


def case_exec(name):
    g = {"W": W, "B": B, "C": C, "N": N, "M": M, "E": E, "U": U, "expected": expected, "sys": sys}
    exec(compile(EXEC_SOURCE, name, "exec"), g)  # @exec
    n, exp = g["r"]
    got = check(f"exec {ascii(name)}", n, exp)
    if got[0][0] != os.fsencode(name) or got[0][2] != 3 or got[0][1] != "<module>" or got[1][2] != MARK["exec"]:
        fail(f"exec {ascii(name)}", f"frames {got[:2]}")


def recurse(depth):
    if depth == 0:
        return W(B, C, N, M, E, U), expected(sys._getframe())  # @recurse_bottom
    return recurse(depth - 1)  # @recurse


def case_deep_recursion():
    global N
    n, exp = recurse(200)
    got = check("deep-recursion-beyond-N", n, exp, ["recurse_bottom"] + ["recurse"] * (N - 1))
    if len(got) != N:
        fail("deep-recursion", f"{len(got)} frames")
    saved, N = N, 1000
    try:
        n, exp = recurse(300)
        check("deep-recursion-within-N", n, exp, ["recurse_bottom"] + ["recurse"] * 300, max_frames=1000)
    finally:
        N = saved


def case_deep_recursion_outer():
    # Deeper than max with the outermost frames asked for (the preload library's 32 and 8): the
    # innermost 24 frames, then the 8 outermost (this script's <module> last), end elided; plain
    # and checked reads alike. Within max, nothing changes.
    global N, M
    saved = N, M
    try:
        N = 32
        for mode in (2, 3):
            M = mode
            n, exp = recurse(200)
            got = parse(n, B, U) if n > 0 else n
            want = exp[:24] + exp[-8:]
            if got != want or E.value != ELIDED:
                fail(f"deep-recursion-outer (mode {mode})",
                     f"{END_NAMES[E.value]}, {n} frames:\n  got  {got}\n  want {want}")
            n, exp = recurse(10)
            check(f"deep-recursion-outer-within (mode {mode})", n, exp, ["recurse_bottom"] + ["recurse"] * 10)
        print("ok deep-recursion-outer: 24 innermost and 8 outermost frames, elided", flush=True)
    finally:
        N, M = saved


def case_through_c():
    # Python called back from C (sorted's key): a C-stack boundary in the frame chain.
    result = []
    sorted([2, 1], key=lambda v: result.append((W(B, C, N, M, E, U), expected(sys._getframe()))) or v)  # @through_c
    for i, (n, exp) in enumerate(result):
        if i == len(result) - 1:
            check("through-c-callback", n, exp, ["through_c", "through_c"])


def case_comprehension():
    r = [(W(B, C, N, M, E, U), expected(sys._getframe())) for _ in range(1)]  # @comprehension
    n, exp = r[0]
    check("comprehension", n, exp, ["comprehension"])


def case_traced():
    # Under a trace function (the frames then keep f_lineno themselves in 3.10).
    def tracer(frame, event, arg):
        return tracer

    sys.settrace(tracer)
    try:
        n, exp = W(B, C, N, M, E, U), expected(sys._getframe())  # @traced
    finally:
        sys.settrace(None)
    check("traced", n, exp, ["traced"])


def case_class_body():
    class Body:
        r = W(B, C, N, M, E, U), expected(sys._getframe())  # @class_body

    n, exp = Body.r
    check("class-body", n, exp, ["class_body"])


def case_native_thread():
    end = ctypes.c_int()
    n = lib.aw_walk_native_thread(ctypes.byref(end))
    if n != 0 or end.value != NO_THREAD_STATE:
        fail("native-thread", f"{n} frames, end {END_NAMES[end.value]}")
    print("ok native-thread: no frames, no thread state", flush=True)


GIL_THREAD = []


def gil_thread_entry():
    buf, end, used = ctypes.create_string_buffer(1 << 16), ctypes.c_int(), ctypes.c_int()
    GIL_THREAD.append((W(buf, C, N, M, end, used), expected(sys._getframe()), buf, used, end))  # @gil_thread


def case_native_thread_with_gilstate():
    # A native thread entering Python through PyGILState_Ensure (as C++ libraries' threads do).
    rc = lib.aw_run_python_on_native_thread(b"import __main__\n__main__.gil_thread_entry()\n")
    if rc != 0 or not GIL_THREAD:
        fail("native-thread-gilstate", f"PyRun_SimpleString returned {rc}")
    n, exp, buf, used, end = GIL_THREAD[0]
    got = check("native-thread-gilstate", n, exp, ["gil_thread"], buf=buf, used=used, end=end)
    if got[-1][1] != "<module>" or got[-1][0] != b"<string>":
        fail("native-thread-gilstate", f"outermost frame {got[-1]}")


# --- borrowed frames: a native thread without Python reads another thread's (capture_borrowed) ---

WB = lib.aw_walk_borrowed
WB.argtypes = [ctypes.POINTER(ctypes.c_char), ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_int),
               ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_int)]
HAS_NATIVE_ID = sys.version_info >= (3, 11)  # 3.10's thread states keep no native thread id
# Each case calls WB directly (a new native thread borrows while this thread waits in the call,
# GIL released), so that the frames are those of the line that called it.


def check_lender(case, tid, running, want_tid, want_running):
    want = want_tid if HAS_NATIVE_ID else 0
    if tid.value != want or running.value != want_running:
        fail(case, f"lender tid {tid.value} running {running.value}, expected tid {want} running {want_running}")


def borrowed_inner(tid, running):
    return WB(B, C, N, E, U, tid, running), expected(sys._getframe())  # @borrowed_inner


def case_borrowed_main():
    # The main thread waits in the call: its frames, marked waiting, with its native id.
    tid, running = ctypes.c_uint(), ctypes.c_int()
    n, exp = borrowed_inner(tid, running)  # @borrowed_outer
    check("borrowed-main", n, exp, ["borrowed_inner", "borrowed_outer"])
    check_lender("borrowed-main", tid, running, threading.get_native_id(), 0)
    n2, exp2 = WB(B, C, N, E, U, tid, running), expected(sys._getframe())  # @borrowed_line2
    got2 = check("borrowed-main-line2", n2, exp2, ["borrowed_line2"])
    if got2[0][2] == MARK["borrowed_outer"]:
        fail("borrowed-main-line2", "two lines gave the same line")


WBM = lib.aw_walk_borrowed_memo
WBM.argtypes = [ctypes.c_int] + WB.argtypes
WALK_CONFIRM, CONFIRM_KEPT, WALK_KEEP = 1, 2, 3


def case_borrowed_confirmed():
    # A borrowed walk kept (what it read, what it found) is confirmed by reading the same memory
    # again (confirm_borrowed): the same frames, lender and end as the walk.
    tid, running = ctypes.c_uint(), ctypes.c_int()
    n, exp = WBM(WALK_CONFIRM, B, C, N, E, U, tid, running), expected(sys._getframe())  # @confirm_same
    check("borrowed-confirmed", n, exp, ["confirm_same"])
    check_lender("borrowed-confirmed", tid, running, threading.get_native_id(), 0)
    # Kept on one call and confirmed on the next from the same frame and instruction (a loop, as
    # a training loop's loss.backward()): confirmed, with that line. (3.11 counts a code object's
    # first executions down in the code object itself, co_warmup, which the walk reads: the loop
    # runs past that before the walk it confirms.)
    results = []
    for mode in [WALK_KEEP] * 16 + [CONFIRM_KEPT]:
        results.append((WBM(mode, B, C, N, E, U, tid, running), expected(sys._getframe())))  # @confirm_loop
    n, exp = results[-1]
    if n <= 0:
        fail("borrowed-confirmed-loop", f"an unchanged walk was not confirmed ({n})")
    check("borrowed-confirmed-loop", n, exp, ["confirm_loop"])
    # A kept walk serves a request for fewer frames (its first ones, depth-limit), not one for
    # more when it stopped at its own limit.
    results = []
    for mode, limit in [(WALK_KEEP, N)] * 16 + [(CONFIRM_KEPT, 2)]:
        results.append((WBM(mode, B, C, limit, E, U, tid, running), expected(sys._getframe())))  # @confirm_fewer
    n, exp = results[-1]
    if n <= 0:
        fail("borrowed-confirmed-fewer", f"an unchanged walk was not confirmed for fewer frames ({n})")
    check("borrowed-confirmed-fewer", n, exp, ["confirm_fewer"], max_frames=2)
    for mode, limit in [(WALK_KEEP, 2)] * 16 + [(CONFIRM_KEPT, N)]:
        n = WBM(mode, B, C, limit, E, U, tid, running)  # @confirm_more
    if n != 0:
        fail("borrowed-confirm-more", f"{n} frames confirmed from a walk cut at 2 for a request of {N}")
    print("ok borrowed-confirm-more: a walk cut at its limit does not serve a larger one", flush=True)
    # Once the lender has moved to another line, the kept walk is not confirmed (never a stale
    # line), and it stays dropped.
    n = WBM(CONFIRM_KEPT, B, C, N, E, U, tid, running)  # @confirm_moved
    if n != 0:
        fail("borrowed-confirm-moved", f"{n} frames confirmed after the lender moved: {parse(n, B, U)}")
    n = WBM(CONFIRM_KEPT, B, C, N, E, U, tid, running)
    if n != 0:
        fail("borrowed-confirm-dropped", f"{n} frames confirmed from a dropped walk")
    print("ok borrowed-confirm-moved: not confirmed once the lender moved", flush=True)


def spin(stop):
    x = 0
    while not stop.is_set():
        x += 1  # @spin


def case_borrowed_busy_thread():
    # A second thread running bytecode (holding the GIL nearly always) does not take the line from
    # the main thread that waits in the call.
    stop = threading.Event()
    t = threading.Thread(target=spin, args=(stop,))
    t.start()
    try:
        tid, running = ctypes.c_uint(), ctypes.c_int()
        for i in range(20):
            n, exp = WB(B, C, N, E, U, tid, running), expected(sys._getframe())  # @borrowed_busy
            if i == 19:
                check("borrowed-busy-thread (20 walks)", n, exp, ["borrowed_busy"])
            elif n < 1 or parse(n, B, U)[0][2] != MARK["borrowed_busy"]:
                fail("borrowed-busy-thread", f"walk {i}: {parse(n, B, U) if n > 0 else n}")
            check_lender("borrowed-busy-thread", tid, running, threading.get_native_id(), 0)
    finally:
        stop.set()
        t.join()


def borrowed_in_thread(out, go):
    while not go:
        pass  # until the main thread is past Thread.start (whose wait releases the GIL)
    buf, end, used = ctypes.create_string_buffer(1 << 16), ctypes.c_int(), ctypes.c_int()
    tid, running = ctypes.c_uint(), ctypes.c_int()
    out.append((WB(buf, C, N, end, used, tid, running), expected(sys._getframe()), buf, used, end,  # @borrowed_thread
                tid, running, threading.get_native_id()))


def case_borrowed_other_thread():
    # The main thread runs bytecode (holds the GIL) while another thread waits in the call: that
    # thread's frames (rule 2). The main thread can still be caught waiting for the GIL while the
    # other thread hands it over (docs/python-frames.md: a thread blocked taking the GIL counts as
    # waiting), and then its own frames are borrowed (rule 1): a loaded machine may leave the main
    # thread unscheduled between the other thread's release of the GIL and its own taking of it,
    # so up to 50 attempts, one must be rule 2 (told by the frames: 3.10 has no native thread ids).
    for attempt in range(50):
        out, go = [], []
        t = threading.Thread(target=borrowed_in_thread, args=(out, go))
        t.start()
        go.append(1)
        while t.is_alive():
            pass  # spins with the GIL: not waiting
        t.join()
        n, exp, buf, used, end, tid, running, native_id = out[0]
        got = parse(n, buf, used) if n > 0 else []
        if (n == len(exp) and got[0][2] == MARK["borrowed_thread"]
                and tid.value == (native_id if HAS_NATIVE_ID else 0)):
            break
        print(f"borrowed-other-thread: attempt {attempt + 1} borrowed from thread {tid.value}, not {native_id}")
    check("borrowed-other-thread", n, exp, ["borrowed_thread"], buf=buf, used=used, end=end)
    check_lender("borrowed-other-thread", tid, running, native_id, 0)


def borrowed_here_in_thread(out, go):
    while not go:
        pass  # until the main thread is past Thread.start
    buf, end, used = ctypes.create_string_buffer(1 << 16), ctypes.c_int(), ctypes.c_int()
    tid, running = ctypes.c_uint(), ctypes.c_int()
    out.append((lib.aw_walk_borrowed_here(buf, C, N, ctypes.byref(end), ctypes.byref(used), ctypes.byref(tid),  # @here
                                          ctypes.byref(running)), buf, used, tid, threading.get_native_id()))


def case_borrowed_never_from_itself():
    # A thread with frames of its own that borrows (one Python did not create, in the preload) while
    # the main thread runs bytecode: it is the one thread waiting in a C call, but never its own
    # lender; the main thread lends (running, or waiting for the GIL).
    out, go = [], []
    t = threading.Thread(target=borrowed_here_in_thread, args=(out, go))
    t.start()
    go.append(1)
    while t.is_alive():
        pass  # spins with the GIL
    t.join()
    n, buf, used, tid, native_id = out[0]
    got = parse(n, buf, used) if n > 0 else []
    if n < 1 or got[0][2] == MARK["here"] or (HAS_NATIVE_ID and tid.value != threading.get_native_id()):
        fail("borrowed-never-from-itself", f"{n} frames from thread {tid.value} (itself: {native_id}): {got}")
    print(f"ok borrowed-never-from-itself: {n} frames of the main thread, innermost line {got[0][2]}", flush=True)


def case_borrowed_running():
    # Nobody waits: the native thread borrows from the thread running bytecode, marked running.
    if lib.aw_borrow_async_start(50, N) != 0:
        fail("borrowed-running", "no native thread")
    import time
    until = time.monotonic() + 0.3
    # One line: the frame is at it whichever part of the loop runs.
    while time.monotonic() < until: pass  # @borrowed_running
    buf, end, used = ctypes.create_string_buffer(1 << 16), ctypes.c_int(), ctypes.c_int()
    tid, running = ctypes.c_uint(), ctypes.c_int()
    n = lib.aw_borrow_async_join(buf, len(buf), ctypes.byref(end), ctypes.byref(used), ctypes.byref(tid),
                                 ctypes.byref(running))
    exp = expected(sys._getframe())
    got = parse(n, buf, used) if n > 0 else []
    # The loop's line (time.monotonic() is C: no frame of its own), then this function's callers.
    if n < 1 or got[0][2] != MARK["borrowed_running"] or got[1:] != exp[1:]:
        fail("borrowed-running", f"{n} frames: {got}")
    check_lender("borrowed-running", tid, running, threading.get_native_id(), 1)
    print(f"ok borrowed-running: {n} frames, innermost line {got[0][2]}, marked running", flush=True)


def case_fork_child():
    # A child made by fork walks its own copy of the stack (other threads' states were freed).
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            n, exp = W(B, C, N, M, E, U), expected(sys._getframe())  # @fork_child
            check("fork-child", n, exp, ["fork_child"])
            code = 0
        except SystemExit as exit:  # check() failed
            code = exit.code
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if status != 0:
        fail("fork-child", f"the child ended with status {status:#x}")


def case_status():
    text = ctypes.create_string_buffer(1024)
    lib.aw_status(text, len(text))
    availability, version, searches, detail = text.value.decode().split(" ", 3)
    want = sys.hexversion if sys.version_info >= (3, 11) else sys.hexversion & 0xffff0000
    if availability != "3" or int(version) != want or searches != "1":
        fail("status", text.value.decode())
    print(f"ok status: CPython {int(version):#x} in {detail}, searched {searches} time", flush=True)


def main():
    cases = [case_nested, case_distinct_lines, case_checked_reads, case_method_qualname,
             case_second_thread, case_generator, case_coroutine, case_asyncio, case_deep_recursion, case_deep_recursion_outer,
             case_through_c, case_comprehension, case_traced, case_class_body, case_native_thread,
             case_native_thread_with_gilstate, case_borrowed_main, case_borrowed_confirmed, case_borrowed_busy_thread,
             case_borrowed_other_thread, case_borrowed_never_from_itself, case_borrowed_running, case_fork_child]
    for case in cases:
        case()
    for name in ["<exec-ascii>", "<exec-\xe9>", "<exec-\u65e5\u672c>", "<exec-\U0001f600>", "<exec-\udcff>"]:
        case_exec(name)
    case_status()
    print("all cases passed", flush=True)


if __name__ == "__main__":
    main()
