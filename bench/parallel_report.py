#!/usr/bin/env python3
"""Reading a job's traces in parallel (report --jobs): N traces, 1 thread vs 2 (or more).

  parallel_report.py --asyncwatch BIN --generator GEN [--traces N] [--records R] [--jobs 2] [--dir D]

Prints the wall time and the speed-up of each run, and fails only when the reports differ (the
parallel report must be the serial one, byte for byte). Asserts nothing about time."""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("--asyncwatch", required=True)
ap.add_argument("--generator", required=True)
ap.add_argument("--traces", type=int, default=8)
ap.add_argument("--records", type=int, default=500000)
ap.add_argument("--jobs", type=int, nargs="+", default=[2])
ap.add_argument("--repeat", type=int, default=3)
ap.add_argument("--dir")
a = ap.parse_args()

base = a.dir or tempfile.gettempdir()
os.makedirs(base, exist_ok=True)
work = tempfile.mkdtemp(prefix="aw-parallel-", dir=base)
try:
    for i in range(a.traces):
        subprocess.run([a.generator, os.path.join(work, f"rank{i}.awtrace"), "--records", str(a.records),
                        "--call-sites", "200"], check=True, stdout=subprocess.DEVNULL)
    env = dict(os.environ, ASYNCWATCH_NO_SYMBOLS="1")

    def report(jobs):
        best, out = None, None
        for _ in range(a.repeat):
            t0 = time.monotonic()
            p = subprocess.run([a.asyncwatch, "report", "--format", "json", "--jobs", str(jobs), work],
                               capture_output=True, env=env)
            dt = time.monotonic() - t0
            if p.returncode not in (0, 1):
                sys.exit(f"report --jobs {jobs} failed ({p.returncode}): {p.stderr.decode()[:500]}")
            best = dt if best is None else min(best, dt)
            out = p.stdout
        return best, out

    serial, expected = report(1)
    print(f"{a.traces} traces x {a.records} records, {os.cpu_count()} cores: --jobs 1 {serial:.3f} s (best of {a.repeat})")
    bad = False
    for j in a.jobs:
        t, out = report(j)
        same = out == expected
        bad |= not same
        print(f"  --jobs {j}: {t:.3f} s, {serial / t:.2f}x the serial speed, report {'identical' if same else 'DIFFERENT'}")
    sys.exit(1 if bad else 0)
finally:
    shutil.rmtree(work)
