#!/usr/bin/env python3
"""Test cli.export-rows: `asyncwatch export --format csv` writes one row per call of each trace (the
JSON report's processes[].cuda_calls), under the documented header (docs/export.md, version 1), as
CSV that parses; the rows of flagged calls name a finding the report has.

usage: check_export.py ASYNCWATCH GOLDEN_DIR
"""
import csv
import io
import json
import subprocess
import sys
from pathlib import Path

HEADER = ("trace,pid,tid,record,api,driver_api,start_ns,end_ns,duration_ns,result,stream_kind,stream,direction,"
          "src_memory,dst_memory,bytes,kernel,flags,stack_id,finding,finding_rank,blocked_ns,call_site,simulated")


def main():
    aw, golden = sys.argv[1], Path(sys.argv[2])
    problems, checked = [], 0
    for trace in sorted(golden.rglob("*.awtrace")):
        report = subprocess.run([aw, "report", "--format", "json", str(trace)], capture_output=True, text=True)
        if report.returncode not in (0, 1, 3, 4) or not report.stdout.strip():
            continue  # not a readable trace (the corrupt ones of the golden set): export must refuse it too
        doc = json.loads(report.stdout)
        calls = sum(p["cuda_calls"] for p in doc["processes"])
        ids = {f["id"] for f in doc["findings"]}
        done = subprocess.run([aw, "export", "--format", "csv", str(trace)], capture_output=True, text=True)
        if done.returncode != 0:
            problems.append(f"{trace}: export exited {done.returncode}: {done.stderr.strip()}")
            continue
        if done.stdout.splitlines()[0] != HEADER:
            problems.append(f"{trace}: header {done.stdout.splitlines()[0]!r}")
        rows = list(csv.DictReader(io.StringIO(done.stdout)))
        if len(rows) != calls:
            problems.append(f"{trace}: {len(rows)} rows, the report counts {calls} calls")
        for r in rows:
            if r["finding"] and r["finding"] not in ids:
                problems.append(f"{trace}: row names finding {r['finding']}, not in the report")
                break
            if int(r["end_ns"]) < int(r["start_ns"]) or int(r["duration_ns"]) != int(r["end_ns"]) - int(r["start_ns"]):
                problems.append(f"{trace}: times {r['start_ns']}..{r['end_ns']} duration {r['duration_ns']}")
                break
        checked += 1
    bad = subprocess.run([aw, "export", str(golden / "not-a-trace.awtrace")], capture_output=True, text=True)
    if bad.returncode != 2:
        problems.append(f"a file that is not a trace: exit {bad.returncode}, expected 2")
    for p in problems:
        print("FAILED:", p)
    if checked < 10:
        problems.append(f"only {checked} traces checked")
    print(f"{checked} traces: rows = calls" if not problems else "")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
