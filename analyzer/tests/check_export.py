#!/usr/bin/env python3
"""Test cli.export-rows: `asyncwatch export` writes one row per call of each trace (the JSON report's
processes[].cuda_calls), under the documented header (docs/export.md, version 1), as CSV that
parses; the rows of flagged calls name a finding the report has. `--format sqlite` writes a database
whose `calls` table holds the same rows (NULL where the CSV cell is empty), schema version 1.
`--format parquet` writes a file that pyarrow reads as the same rows (null where the CSV cell is
empty), typed columns, schema version 1 in its metadata: checked when PYARROW_PYTHON, a Python with
pyarrow (.ci/setup makes one when the network allows), is given; else only its framing.

usage: check_export.py ASYNCWATCH GOLDEN_DIR [PYARROW_PYTHON]
"""
import csv
import io
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

HEADER = ("trace,pid,tid,record,api,driver_api,start_ns,end_ns,duration_ns,result,stream_kind,stream,direction,"
          "src_memory,dst_memory,bytes,kernel,flags,stack_id,finding,finding_rank,blocked_ns,call_site,simulated")


def same_rows(what, columns, rows, csv_rows):
    """Rows of a typed export (None where not applicable) against the CSV's: count and every cell."""
    if len(rows) != len(csv_rows):
        return [f"{what} has {len(rows)} rows, the CSV {len(csv_rows)}"]
    for row, c in zip(rows, csv_rows):
        as_csv = ["" if v is None else str(v) for v in row]
        if as_csv != [c[k] for k in columns]:
            return [f"{what} row {as_csv} differs from the CSV's {list(c.values())}"]
    return []


def check_sqlite(aw, trace, csv_rows):
    """The SQLite export of `trace` against its CSV rows: same count, same cells, typed columns."""
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "calls.db")
        done = subprocess.run([aw, "export", "--format", "sqlite", "-o", db, str(trace)], capture_output=True,
                              text=True)
        if done.returncode != 0:
            return [f"{trace}: sqlite export exited {done.returncode}: {done.stderr.strip()}"]
        con = sqlite3.connect(db)
        try:
            version = con.execute("PRAGMA user_version").fetchone()[0]
            meta = dict(con.execute("SELECT key, value FROM asyncwatch_export"))
            columns = [r[1] for r in con.execute("PRAGMA table_info(calls)")]
            rows = con.execute("SELECT * FROM calls ORDER BY rowid").fetchall()
        finally:
            con.close()
    problems = []
    if version != 1 or meta.get("schema_version") != "1":
        problems.append(f"{trace}: sqlite schema version {version} / {meta.get('schema_version')}, expected 1")
    if ",".join(columns) != HEADER:
        problems.append(f"{trace}: sqlite columns {columns}")
    problems += same_rows(f"{trace}: sqlite", columns, rows, csv_rows)
    for db_row in rows:
        if not isinstance(db_row[columns.index("start_ns")], int):
            problems.append(f"{trace}: start_ns stored as {type(db_row[columns.index('start_ns')]).__name__}")
            break
    return problems


# Run by PYARROW_PYTHON: the file's schema, metadata and rows as JSON.
READ_PARQUET = """
import json, sys
import pyarrow.parquet as pq
f = pq.ParquetFile(sys.argv[1])
t = f.read()
print(json.dumps({"columns": [(x.name, str(x.type)) for x in t.schema],
                  "metadata": {k.decode(): v.decode() for k, v in (f.metadata.metadata or {}).items()},
                  "groups": f.metadata.num_row_groups, "rows": [list(r.values()) for r in t.to_pylist()]}))
"""


def check_parquet(aw, trace, csv_rows, pyarrow_python):
    """The Parquet export of `trace` against its CSV rows (read by pyarrow), or its framing only."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "calls.parquet")
        done = subprocess.run([aw, "export", "--format", "parquet", "-o", out, str(trace)], capture_output=True,
                              text=True)
        if done.returncode != 0:
            return [f"{trace}: parquet export exited {done.returncode}: {done.stderr.strip()}"]
        data = Path(out).read_bytes()
        footer = int.from_bytes(data[-8:-4], "little") if len(data) >= 12 else -1
        if data[:4] != b"PAR1" or data[-4:] != b"PAR1" or not 0 < footer < len(data) - 12:
            return [f"{trace}: not a Parquet file's framing (magic, footer length {footer})"]
        if not pyarrow_python:
            return []
        read = subprocess.run([pyarrow_python, "-c", READ_PARQUET, out], capture_output=True, text=True)
        if read.returncode != 0:
            return [f"{trace}: pyarrow cannot read the Parquet export: {read.stderr.strip().splitlines()[-1:]}"]
    doc = json.loads(read.stdout)
    problems = []
    names = [c[0] for c in doc["columns"]]
    if ",".join(names) != HEADER:
        problems.append(f"{trace}: parquet columns {names}")
    types = dict(doc["columns"])
    if types.get("start_ns") != "int64" or types.get("api") != "string":
        problems.append(f"{trace}: parquet column types {types}")
    if doc["metadata"].get("asyncwatch.schema_version") != "1":
        problems.append(f"{trace}: parquet metadata {doc['metadata']}")
    return problems + same_rows(f"{trace}: parquet", names, doc["rows"], csv_rows)


def main():
    aw, golden = sys.argv[1], Path(sys.argv[2])
    pyarrow_python = sys.argv[3] if len(sys.argv) > 3 else ""
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
        problems += check_sqlite(aw, trace, rows)
        problems += check_parquet(aw, trace, rows, pyarrow_python)
        checked += 1
    for fmt in ("csv", "sqlite", "parquet"):
        bad = subprocess.run([aw, "export", "--format", fmt, str(golden / "not-a-trace.awtrace")], capture_output=True)
        if bad.returncode != 2 or (fmt != "csv" and bad.stdout):
            problems.append(f"{fmt}: a file that is not a trace: exit {bad.returncode}, expected 2 (no output)")
    for p in problems:
        print("FAILED:", p)
    if checked < 10:
        problems.append(f"only {checked} traces checked")
    if not problems:
        print(f"{checked} traces: rows = calls, CSV, SQLite and Parquet"
              + ("" if pyarrow_python else " (Parquet's framing only: no Python with pyarrow given)"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
