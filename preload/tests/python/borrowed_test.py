"""CI test of borrowed Python frames (docs/python-frames.md, "Borrowed frames"): runs
borrowed_app.py traced on the simulator, where CUDA calls run on a native worker thread without
Python while the main thread waits for them in ctypes and a second thread runs bytecode. Each
marked line must be the call site of exactly one finding (pageable-async-copy at the two copy
lines, hidden-sync at the sync line), marked borrowed from the main thread (waiting) with the
worker as the thread the calls ran on, in JSON, text and SARIF. With ASYNCWATCH_PYTHON=off no
call site is a .py file. A run that exits while the worker copies (the interpreter finalizes
under the borrowing thread) exits 0 and its trace reads. A worker with a Python thread state of its
own and no frames (PyTorch's autograd engine threads while `loss.backward()` waits) borrows the
main thread's lines the same way, also when it makes 1,000 calls while one line waits (beyond a
thread's bursts of borrowed walks and of confirmations: the waiting lender's last read taken again). A worker that calls back into Python (autograd's
engine thread running a compiled backward) keeps its own frames and gets the waiting line after
them: a callback of the framework's is reported at the line that waits, the user's own at its line,
also when the worker takes and drops the GIL between its 1,000 calls a wait (gil-flip).

    python borrowed_test.py ASYNCWATCH_BINARY WORKER.so
Exit status 0 when every check passed, 1 otherwise."""
import json
import os
import re
import shutil
import sys
import tempfile

from traced_app import check, marked_lines, report, run_traced, summary

HERE = os.path.dirname(os.path.abspath(__file__))
APP = os.path.join(HERE, "borrowed_app.py")
ITERATIONS, KERNEL_MS = 3, 20
sys.path.insert(0, os.path.join(HERE, "vendor", "site-packages"))
from fakeframework import MANY  # noqa: E402  (the copies a wait of the backward and gil-flip runs)


def run_app(aw, worker, out_dir, env_extra, *extra):
    return run_traced(aw, out_dir, env_extra, [APP, worker, str(ITERATIONS), str(KERNEL_MS), *extra])


def copy_findings(aw, worker, out_dir, mode, what):
    """Runs the app in `mode`: the run and its pageable-async-copy findings (None when it failed)."""
    r = run_app(aw, worker, out_dir, {}, mode)
    check(r.returncode == 0, f"run with {what} exits 0 (got {r.returncode}: {r.stderr[-400:]})")
    if r.returncode:
        return r, None
    return r, [f for f in json.loads(report(aw, out_dir, "json"))["findings"] if f["id"] == "pageable-async-copy"]


def at(finding):
    cs = finding.get("call_site") or {}
    return os.path.basename(cs.get("file") or ""), cs.get("line")


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    aw, worker = sys.argv[1], sys.argv[2]
    lines = marked_lines(APP)
    tmp = tempfile.mkdtemp(prefix="aw-borrowed-")
    try:
        on, off, busy = (os.path.join(tmp, d) for d in ("on", "off", "exit-busy"))
        r = run_app(aw, worker, on, {})
        check(r.returncode == 0, f"traced run exits 0 (got {r.returncode}: {r.stderr[-400:]})")
        if r.returncode:
            return 1
        m = re.search(r"main native id (\d+)", r.stdout)
        main_tid = int(m.group(1)) if m else None
        rep = json.loads(report(aw, on, "json"))
        fs = rep["findings"]
        worker_tids = set()
        for mark, rule in (("copy_a", "pageable-async-copy"), ("copy_b", "pageable-async-copy"), ("sync", "hidden-sync")):
            got = [f for f in fs if at(f) == ("borrowed_app.py", lines[mark]) and f["id"] == rule]
            check(len(got) == 1, f"one {rule} finding at borrowed_app.py:{lines[mark]} ({mark}), got {len(got)}")
            if not got:
                continue
            f = got[0]
            check(f["count"] == ITERATIONS, f"{mark}: {f['count']} calls (expected {ITERATIONS})")
            check(f["call_site"].get("function") == "main" and f["call_site"].get("user_code") is True,
                  f"{mark}: the call site is user code in main ({f['call_site'].get('function')})")
            b = f["call_site"].get("borrowed")
            check(isinstance(b, dict), f"{mark}: the call site is marked borrowed ({b})")
            if not isinstance(b, dict):
                continue
            want_thread = main_tid if sys.version_info >= (3, 11) else None  # 3.10 keeps no native id
            check(b.get("thread") == want_thread, f"{mark}: borrowed from thread {b.get('thread')} (the main thread, {want_thread})")
            check(b.get("waiting") is True, f"{mark}: the lender was waiting")
            nts = b.get("native_threads") or []
            check(len(nts) == 1 and nts[0] != main_tid, f"{mark}: the calls ran on one other thread ({nts})")
            worker_tids.update(nts)
        check(len(worker_tids) == 1, f"every finding names the same worker thread ({sorted(worker_tids)})")
        # No borrowed line but the marked ones: not the busy thread's, not the main thread's others
        # (its own launches of the kernel are findings of its own, not borrowed).
        stray = [at(f) for f in fs if (f.get("call_site") or {}).get("borrowed") and at(f) not in
                 {("borrowed_app.py", n) for n in lines.values()}]
        check(not stray, f"no borrowed call site but the marked lines ({stray})")
        sites = [at(f) + (f["id"], f.get("cause")) for f in fs]
        check(len(sites) == len(set(sites)), "no two findings share a call site, rule and cause")
        text = report(aw, on, "text")
        check(text.count(f"the Python line of thread {main_tid}" if sys.version_info >= (3, 11)
                         else "the Python line of another thread") >= 3,
              "the text report says each line was borrowed, and from which thread")
        sarif = json.loads(report(aw, on, "sarif"))
        found = set()
        for res in sarif["runs"][0]["results"]:
            pl = res["locations"][0]["physicalLocation"]
            if "the Python line of" in res["message"]["text"]:
                found.add((os.path.basename(pl["artifactLocation"]["uri"]), pl.get("region", {}).get("startLine")))
        for mark in ("copy_a", "copy_b", "sync"):
            check(("borrowed_app.py", lines[mark]) in found, f"sarif: a borrowed result at borrowed_app.py:{lines[mark]}")

        r = run_app(aw, worker, off, {"ASYNCWATCH_PYTHON": "off"})
        check(r.returncode == 0, f"run with ASYNCWATCH_PYTHON=off exits 0 (got {r.returncode})")
        py = [at(f) for f in json.loads(report(aw, off, "json"))["findings"] if at(f)[0].endswith(".py")]
        check(not py, f"ASYNCWATCH_PYTHON=off: no .py call site ({py})")

        attached = os.path.join(tmp, "attached")
        r = run_app(aw, worker, attached, {}, "attached")
        check(r.returncode == 0, f"run with the worker attached to Python exits 0 (got {r.returncode}: {r.stderr[-400:]})")
        if r.returncode == 0:
            fs = json.loads(report(aw, attached, "json"))["findings"]
            for mark, rule in (("copy_a", "pageable-async-copy"), ("copy_b", "pageable-async-copy"), ("sync", "hidden-sync")):
                got = [f for f in fs if at(f) == ("borrowed_app.py", lines[mark]) and f["id"] == rule]
                check(len(got) == 1 and got[0]["count"] == ITERATIONS and isinstance(got[0]["call_site"].get("borrowed"), dict),
                      f"attached worker: {mark}: one borrowed {rule} finding of {ITERATIONS} calls at borrowed_app.py:{lines[mark]}")

        # As autograd's engine thread in loss.backward(): 1,000 copies while one line waits, more
        # than a thread's bursts of borrowed walks (64) and of confirmations (320, a re-read of what
        # the last walk read: python_frames::confirm_borrowed): beyond them, within 200 us of a read
        # that found the lender waiting, its frames are taken again unread: every copy has that line.
        _, fs = copy_findings(aw, worker, os.path.join(tmp, "backward"), "backward",
                              f"a worker making {MANY:,} copies a wait")
        if fs is not None:
            got = [f for f in fs if at(f) == ("borrowed_app.py", lines["backward"])]
            check(len(got) == 1 and got[0]["count"] == MANY * ITERATIONS and
                  isinstance(got[0]["call_site"].get("borrowed"), dict),
                  f"backward: one borrowed finding of {MANY * ITERATIONS} copies at borrowed_app.py:{lines['backward']} "
                  f"(got {[(at(f), f['count']) for f in fs]})")

        # A native thread that runs Python of its own (autograd's engine running a compiled
        # backward): its own frames first, the waiting thread's after them. The framework's code
        # (site-packages) has no user line: the finding is at the line that waits, borrowed; the
        # user's own callback has one: the finding is there, its own.
        r, fs = copy_findings(aw, worker, os.path.join(tmp, "callback"), "callback", "Python callbacks on the worker")
        if fs is not None:
            where = [(at(f), f["count"]) for f in fs]
            lib = [f for f in fs if at(f) == ("borrowed_app.py", lines["callback"])]
            # Under a sanitizer its runtime's pthread_create calls glibc's past the library's own, so
            # the worker's start routine is not known and the thread counts as Python's (its own frames
            # only, the documented fallback: docs/python-frames.md): nothing borrowed at the waiting line.
            sanitized = bool(os.environ.get("AW_PRELOAD_PREFIX"))
            if sanitized:
                print("skip callback: the borrowed line (a sanitizer's pthread_create passes the library's by)")
                check(not lib, f"callback under a sanitizer: nothing borrowed at borrowed_app.py:{lines['callback']} "
                               f"(got {where})")
            else:
                check(len(lib) == 1 and lib[0]["count"] == ITERATIONS and isinstance(lib[0]["call_site"].get("borrowed"), dict),
                      f"callback: one borrowed finding of {ITERATIONS} copies at the waiting line borrowed_app.py:"
                      f"{lines['callback']} (got {where})")
            if lib and not sanitized:
                b = lib[0]["call_site"].get("borrowed") or {}
                m = re.search(r"main native id (\d+)", r.stdout)
                want_thread = int(m.group(1)) if m and sys.version_info >= (3, 11) else None
                check(b.get("thread") == want_thread and b.get("waiting") is True,
                      f"callback: borrowed from the waiting main thread ({b})")
                py = [(os.path.basename(fr.get("file") or ""), fr.get("function"), fr.get("borrowed", False))
                      for fr in lib[0]["stack"] if (fr.get("file") or "").endswith(".py")]
                check(len(py) >= 2 and py[0][0] == "fakeframework.py" and py[0][1].endswith("copy_to_host") and
                      py[0][2] is False and
                      py[-1][2] is True and ("borrowed_app.py", "main", True) in py,
                      f"callback: the stack has the worker's own frame, then the main thread's, borrowed ({py})")
            own = [f for f in fs if at(f) == ("borrowed_app.py", lines["own_copy"])]
            check(len(own) == 1 and own[0]["count"] == ITERATIONS and own[0]["call_site"].get("borrowed") is None and
                  own[0]["call_site"].get("user_code") is True,
                  f"callback: the user's own callback's copies at its line borrowed_app.py:{lines['own_copy']}, not "
                  f"borrowed (got {where})")
            th = [f for f in fs if at(f) == ("borrowed_app.py", lines["thread_copy"])]
            check(len(th) == 1 and th[0]["count"] == ITERATIONS and th[0]["call_site"].get("borrowed") is None and
                  not any(fr.get("borrowed") for fr in th[0]["stack"]),
                  f"callback: a threading thread's copies at its own line borrowed_app.py:{lines['thread_copy']}, "
                  f"no frame borrowed (got {where})")
            check(not [f for f in fs if at(f) == ("borrowed_app.py", lines["waits"])],
                  f"callback: nothing at the line that waited for the user's callback ({where})")

        # A worker that takes and drops the GIL itself between its calls (a compiled backward's
        # generated code calls ops that keep it, C++ nodes run without it): the GIL's lock word
        # flips between two calls, which changes nothing for the lender (the worker never lends),
        # so its confirmations hold: 1,000 copies a wait, every one at the waiting line.
        _, fs = copy_findings(aw, worker, os.path.join(tmp, "gil-flip"), "gil-flip", "a worker flipping the GIL")
        if fs is not None:
            where = [(at(f), f["count"]) for f in fs]
            got = [f for f in fs if at(f) == ("borrowed_app.py", lines["gil_flip"])]
            if os.environ.get("AW_PRELOAD_PREFIX"):  # as for callback: the worker counts as Python's
                print("skip gil-flip: the borrowed line (a sanitizer's pthread_create passes the library's by)")
            else:
                check(len(got) == 1 and got[0]["count"] == MANY * ITERATIONS and
                      isinstance(got[0]["call_site"].get("borrowed"), dict) and len(fs) == 1,
                      f"gil-flip: one borrowed finding of {MANY * ITERATIONS} copies at borrowed_app.py:"
                      f"{lines['gil_flip']} (got {where})")

        r = run_app(aw, worker, busy, {}, "exit-busy")
        check(r.returncode == 0 and "exiting while the worker copies" in r.stdout,
              f"a run that exits while the worker copies exits 0 (got {r.returncode}: {r.stderr[-400:]})")
        json.loads(report(aw, busy, "json"))  # raises if the trace does not read
        check(True, "its trace reads")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
