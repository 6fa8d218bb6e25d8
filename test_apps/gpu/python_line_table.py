#!/usr/bin/env python3
"""The side-by-side table (op, line, torch's warning, asyncwatch's finding) from python_line.sh's results.

    python3 test_apps/gpu/python_line_table.py RESULTS [--asyncwatch build/bin/asyncwatch]
RESULTS: the python_line.tar.gz, or the directory it unpacks to (python_line/). Reports missing
from the results are made here from the traces (ASYNCWATCH_NO_SYMBOLS=1: the H200's libraries are
not here; Python frames and module paths are all the call sites need). Prints Markdown: per op, its
line, what torch's sync debug mode said there, what asyncwatch found there and whether that is the
expected result; then the other frameworks' lines and the overhead figures. Exit status 1 when a
row is not as expected, 2 for bad input."""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# op -> (what asyncwatch must report at its line: a set of finding ids, empty = nothing; torch warns?)
TORCH_EXPECT = {
    "item": ({"hidden-sync"}, True),
    "cpu": ({"pageable-async-copy", "hidden-sync"}, True),
    "tolist": ({"pageable-async-copy", "hidden-sync"}, True),
    "pageable_non_blocking": ({"pageable-async-copy"}, False),
    "nonzero": ({"hidden-sync"}, True),
    "mask_index": ({"hidden-sync"}, True),
    "print": ({"hidden-sync", "pageable-async-copy"}, True),
    "if_sum": ({"hidden-sync"}, True),
    # torch.unique's synchronize is made under torch's Python wrappers (torch/functional.py,
    # torch/_tensor.py): reported at this line, the wrapper as `via`.
    "unique": ({"hidden-sync", "pageable-async-copy"}, True),
    "tensor_unique": ({"hidden-sync", "pageable-async-copy"}, True),
    "synchronize": ({"explicit-sync"}, False),
    "pinned_non_blocking": (set(), False),
    "side_stream_d2h_pinned": (set(), False),
}
OTHER_EXPECT = {
    "cupy_asnumpy": {"pageable-async-copy", "hidden-sync"},
    "cupy_asarray": {"pageable-async-copy", "hidden-sync"},
    "numba_to_device": {"pageable-async-copy", "hidden-sync"},
    "jax_device_put": {"pageable-async-copy", "hidden-sync"},
    "jax_asarray": {"pageable-async-copy", "hidden-sync", "long-host-callback"},
    # The user's own wait, made by XLA's threads for this line (JAX's docs' loop: step, then
    # block_until_ready): an explicit wait at this line, never hidden-sync.
    "jax_block_until_ready": {"explicit-sync"},
}


def marks(path):
    out = {}
    with open(path) as f:
        for n, text in enumerate(f, 1):
            m = re.search(r"# OP:(\w+)", text)
            if m:
                out[m.group(1)] = n
    return out


def load_report(res, part, aw):
    path = os.path.join(res, "reports", f"{part}.json")
    if os.path.exists(path) and os.path.getsize(path):
        with open(path) as f:
            return json.load(f), "there"
    traces = os.path.join(res, "traces", part)
    if not os.path.isdir(traces) or not any(n.endswith(".awtrace") for n in os.listdir(traces)):
        return None, "no trace"
    env = dict(os.environ, ASYNCWATCH_NO_SYMBOLS="1")
    r = subprocess.run([aw, "report", "--format", "json", traces], capture_output=True, text=True, env=env)
    if r.returncode not in (0, 1, 3) or not r.stdout.strip():
        return None, f"report failed: {r.stderr.strip()[:200]}"
    return json.loads(r.stdout), "here"


def findings_at(report, file_base, line):
    got = []
    for f in report["findings"] if report else []:
        cs = f.get("call_site") or {}
        if os.path.basename(cs.get("file") or "") == file_base and cs.get("line") == line:
            got.append(f)
    return got


def words(fs):
    if not fs:
        return "nothing"
    # "borrowed from T": the line is another thread's (the calls ran on threads without Python, as
    # JAX's copies do on XLA's threads; docs/python-frames.md "Borrowed frames").
    def borrowed(f):
        b = (f.get("call_site") or {}).get("borrowed")
        if not b:
            return ""
        return f", borrowed from thread {b.get('thread')} ({'waiting' if b.get('waiting') else 'running'})"
    return ", ".join(f"{f['id']} ({f['count']}x, {f['blocked_ns']['total'] / 1e6:.1f} ms{borrowed(f)})" for f in fs)


def read(res, name):
    p = os.path.join(res, name)
    return open(p).read() if os.path.exists(p) else ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--asyncwatch", default=os.path.join(HERE, "..", "..", "build", "bin", "asyncwatch"))
    a = ap.parse_args()
    tmp = None
    res = a.results
    if os.path.isfile(res):
        tmp = tempfile.mkdtemp(prefix="aw-pyline-")
        with tarfile.open(res) as t:
            t.extractall(tmp)
        res = tmp
    if os.path.isdir(os.path.join(res, "python_line")):
        res = os.path.join(res, "python_line")
    if not os.path.isdir(res):
        print(f"{a.results}: not python_line.sh's results", file=sys.stderr)
        return 2
    bad = 0
    print(read(res, "summary.txt").strip().replace("\n", "  \n"))
    print()
    warned = {}
    tw = read(res, "torch_warnings.json")
    if tw:
        for w in json.loads(tw)["warnings"]:
            if os.path.basename(w["file"]) == "python_line_torch.py":
                warned[w["line"]] = warned.get(w["line"], 0) + 1
    torch_lines = marks(os.path.join(HERE, "python_line_torch.py"))
    rep, where = load_report(res, "torch-aw", a.asyncwatch)
    print(f"PyTorch (report made {where}; 20 iterations, ~2 ms kernel before each op)\n")
    print("| op | line | torch sync_debug | asyncwatch | expected | |")
    print("|---|---|---|---|---|---|")
    for op, (want, torch_warns) in TORCH_EXPECT.items():
        line = torch_lines[op]
        fs = findings_at(rep, "python_line_torch.py", line)
        ids = {f["id"] for f in fs}
        ok = (ids and ids <= want) if want else not ids
        ok = ok and rep is not None
        bad += not ok
        tw_text = f"warns ({warned[line]}x)" if line in warned else "silent"
        print(f"| `{op}` | {line} | {tw_text} | {words(fs)} | {' or '.join(sorted(want)) or 'nothing'}"
              f"{'' if torch_warns == (line in warned) else ' (torch: ' + ('warns' if torch_warns else 'silent') + ' expected)'} | {'ok' if ok else 'NOT AS EXPECTED'} |")
    # Lines torch warned about that asyncwatch did not report (or the reverse) outside the marked ops.
    other = sorted(set(warned) - set(torch_lines.values()))
    if other:
        print(f"\ntorch also warned at lines {other} (not marked ops)")
    print()
    other_lines = marks(os.path.join(HERE, "python_line_others.py"))
    print("| framework op | line | asyncwatch | |")
    print("|---|---|---|---|")
    for part, ops in (("cupy-aw", ["cupy_asnumpy", "cupy_asarray"]), ("numba-aw", ["numba_to_device"]),
                      ("jax-aw", ["jax_device_put", "jax_asarray", "jax_block_until_ready"])):
        rep, where = load_report(res, part, a.asyncwatch)
        rc = read(res, f"{part}.rc").strip()
        for op in ops:
            fs = findings_at(rep, "python_line_others.py", other_lines[op])
            ok = bool(fs) and {f["id"] for f in fs} <= OTHER_EXPECT[op]
            bad += not ok
            print(f"| `{op}` | {other_lines[op]} | {words(fs) if rep else where + ', rc ' + rc} | {'ok' if ok else 'NOT AS EXPECTED'} |")
    print()
    figures = {}
    for name in sorted(os.listdir(res)):
        if name.startswith("overhead-") and name.endswith(".stdout"):
            m = re.search(r"overhead \w+: ([\d.]+) us per iteration", read(res, name))
            if m:
                figures.setdefault(re.sub(r"-\d+$", "", name[:-7]), []).append(float(m.group(1)))
    if figures:
        base = statistics.median(figures.get("overhead-bare", [0])) or None
        print("| loop (3,000 iterations) | us per iteration | vs bare |")
        print("|---|---|---|")
        for k, v in figures.items():
            med = statistics.median(v)
            rel = f"{(med / base - 1) * 100:+.1f}%" if base else "-"
            print(f"| {k[len('overhead-'):]} | {', '.join(f'{x:.1f}' for x in v)} | {rel} |")
    if tmp:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\n{bad} row(s) not as expected")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
