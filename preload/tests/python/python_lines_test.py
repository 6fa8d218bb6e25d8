"""CI test of the Python line: runs lines_app.py traced on the simulator with this
interpreter and checks that every finding of a marked line is at that line (file, line, function),
that distinct lines give distinct findings (a thread's too), that the synchronization inside the
site-packages stand-in is a hidden-sync at the user's line with what it waited for (also under 40
frames of the stand-in's own: the outermost frames are kept past the 32-frame limit), that SARIF
points at the .py file, and that the report reads the same without native symbols. With
ASYNCWATCH_PYTHON=off the same program runs the same (output, status) and its findings fall back to
native call sites.

    python python_lines_test.py ASYNCWATCH_BINARY
Exit status 0 when every check passed, 1 otherwise."""
import json
import os
import shutil
import sys
import tempfile

from traced_app import check, marked_lines, report, run_traced, summary

HERE = os.path.dirname(os.path.abspath(__file__))
APP = os.path.join(HERE, "lines_app.py")
ITERATIONS, KERNEL_MS = 3, 20  # a kernel long enough that a descheduled test still waits for it


def run_app(aw, out_dir, env_extra):
    return run_traced(aw, out_dir, env_extra, [APP, str(ITERATIONS), str(KERNEL_MS)])


def report_json(aw, out_dir, fmt, env_extra=None):
    return json.loads(report(aw, out_dir, fmt, env_extra))


def at(finding):
    cs = finding.get("call_site") or {}
    return os.path.basename(cs.get("file") or ""), cs.get("line"), cs.get("function")


def check_report(rep, lines, label):
    fs = rep["findings"]
    by_line = {}
    for f in fs:
        file, line, _ = at(f)
        if file == "lines_app.py":
            by_line.setdefault(line, []).append(f)
    expect = [("copy_a", "pageable-async-copy", "copies"), ("copy_b", "pageable-async-copy", "copies"),
              ("thread_copy", "pageable-async-copy", "in_thread"), ("explicit_sync", "explicit-sync", "explicit_sync"),
              ("hidden_sync", "hidden-sync", "hidden_sync"),
              # 40 frames of the framework's own under the user's line: past the 32 Python frames
              # kept, the outermost ones are kept too (python_end "elided")
              ("deep_sync", "hidden-sync", "deep_sync")]
    for mark, rule, function in expect:
        got = [f for f in by_line.get(lines[mark], []) if f["id"] == rule]
        check(len(got) == 1, f"{label}: one {rule} finding at lines_app.py:{lines[mark]} ({mark}), got {len(got)}")
        if got:
            check(got[0]["count"] == ITERATIONS, f"{label}: {mark}: {got[0]['count']} calls (expected {ITERATIONS})")
            check(at(got[0])[2] == function, f"{label}: {mark}: function {at(got[0])[2]!r} (expected {function!r})")
            check(got[0]["call_site"].get("user_code") is True, f"{label}: {mark}: the call site is user code")
    hidden = [f for f in fs if f["id"] == "hidden-sync"]
    check(len(hidden) == 2, f"{label}: exactly two hidden-sync findings (the explicit one is not), got {len(hidden)}")
    if hidden:
        waited = {w["kernel"] if isinstance(w, dict) and "kernel" in w else str(w) for w in hidden[0].get("waited_for", [])}
        check(any("sleep_kernel" in w for w in waited), f"{label}: hidden-sync says it waited for sleep_kernel ({waited})")
    # One finding per (call site, rule, cause): groups of one line are never split (a blocking
    # launch can be a first launch and, when the loaded machine delays it, one of unknown cause).
    sites = [at(f) + (f["id"], f.get("cause")) for f in fs]
    check(len(sites) == len(set(sites)), f"{label}: no two findings share a call site, rule and cause")


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    aw = sys.argv[1]
    lines = marked_lines(APP)
    tmp = tempfile.mkdtemp(prefix="aw-pylines-")
    try:
        on, off = os.path.join(tmp, "on"), os.path.join(tmp, "off")
        r_on = run_app(aw, on, {})
        check(r_on.returncode == 0, f"traced run exits 0 (got {r_on.returncode}: {r_on.stderr[-400:]})")
        r_off = run_app(aw, off, {"ASYNCWATCH_PYTHON": "off"})
        check(r_off.returncode == 0, f"run with ASYNCWATCH_PYTHON=off exits 0 (got {r_off.returncode})")
        app_on = [ln for ln in r_on.stdout.splitlines() if ln.startswith("lines_app:")]
        app_off = [ln for ln in r_off.stdout.splitlines() if ln.startswith("lines_app:")]
        check(app_on == app_off == ["lines_app: done"],
              "the program prints the same with and without frames")
        if r_on.returncode:
            return 1
        check_report(report_json(aw, on, "json"), lines, "json")
        check_report(report_json(aw, on, "json", {"ASYNCWATCH_NO_SYMBOLS": "1"}), lines, "json without native symbols")
        sarif = report_json(aw, on, "sarif")
        locs = set()
        for res in sarif["runs"][0]["results"]:
            pl = res["locations"][0]["physicalLocation"]
            locs.add((os.path.basename(pl["artifactLocation"]["uri"]), pl.get("region", {}).get("startLine"), res["ruleId"]))
        for mark, rule in (("copy_a", "pageable-async-copy"), ("copy_b", "pageable-async-copy"),
                           ("thread_copy", "pageable-async-copy"), ("hidden_sync", "hidden-sync")):
            check(("lines_app.py", lines[mark], rule) in locs, f"sarif: {rule} points at lines_app.py:{lines[mark]}")
        rep_off = report_json(aw, off, "json")
        py_sites = [f for f in rep_off["findings"] if at(f)[0].endswith(".py")]
        check(not py_sites, f"ASYNCWATCH_PYTHON=off: no .py call site ({len(py_sites)} found)")
        ids_off = {f["id"] for f in rep_off["findings"]}
        check("pageable-async-copy" in ids_off, "ASYNCWATCH_PYTHON=off: the copies are still found (native site)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
