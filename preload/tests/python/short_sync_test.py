"""CI test: a hidden sync whose every wait is far below --min-blocked-us (a
`value()` inside the site-packages stand-in after a 10 us kernel, 40 steps) is still found at the
user's line, every call of it: the preload library takes a stack for each synchronize made from
outside the program's own code whatever it waited, and the analyzer reports the site with its
severity from the site's total.

    python short_sync_test.py ASYNCWATCH_BINARY
Exit status 0 when every check passed, 1 otherwise."""
import json
import os
import shutil
import sys
import tempfile

from traced_app import check, marked_lines, report, run_traced, summary

HERE = os.path.dirname(os.path.abspath(__file__))
APP = os.path.join(HERE, "short_sync_app.py")
STEPS, KERNEL_MS = 40, 0.01


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    aw = sys.argv[1]
    line = marked_lines(APP)["item"]
    tmp = tempfile.mkdtemp(prefix="aw-shortsync-")
    try:
        out = os.path.join(tmp, "traces")
        r = run_traced(aw, out, {}, [APP, str(STEPS), str(KERNEL_MS)])
        check(r.returncode == 0, f"traced run exits 0 (got {r.returncode}: {r.stderr[-400:]})")
        check("short_sync_app: done" in r.stdout, "the program ran to its end")
        if r.returncode:
            return summary()
        rep = json.loads(report(aw, out, "json"))
        at_line = [f for f in rep["findings"]
                   if os.path.basename((f.get("call_site") or {}).get("file") or "") == "short_sync_app.py"
                   and f["call_site"].get("line") == line]
        hidden = [f for f in at_line if f["id"] == "hidden-sync"]
        check(len(hidden) == 1, f"one hidden-sync finding at short_sync_app.py:{line}, got {len(hidden)}")
        if hidden:
            f = hidden[0]
            check(f["count"] == STEPS, f"every step's wait is in it: {f['count']} calls (expected {STEPS})")
            total = f["blocked_ns"]["total"]
            want = "warning" if total >= 50_000 else "note"
            check(f["severity"] == want, f"severity from the site's total ({total} ns): {f['severity']} (expected {want})")
            check(f["call_site"].get("function") == "train", f"at function train ({f['call_site'].get('function')!r})")
        unsited = [f for f in rep["findings"] if f["id"] in ("explicit-sync", "hidden-sync") and not f.get("call_site")]
        check(not unsited, f"no synchronization without a call site ({len(unsited)} found)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
