"""Every call of traces as a table: `asyncwatch export --format csv` (docs/export.md, schema version 1).
load_trace is the same function under the name the export's docs use."""
from __future__ import annotations

import csv
import io
import os
import subprocess
from typing import Any, Dict, List, Union

from ._binaries import executable
from ._report import PathLike, ReportError

# The columns that hold whole numbers (the others are text; empty: not applicable).
_INT_COLUMNS = ("pid", "tid", "start_ns", "end_ns", "duration_ns", "result", "bytes", "stack_id", "finding_rank",
                "blocked_ns", "simulated")


def load_calls(*traces: PathLike) -> Union["Any", List[Dict[str, Any]]]:
    """The calls of trace files or directories of traces, one row per call: a pandas DataFrame when
    pandas is installed (an optional dependency), else a list of dicts (numbers as int, None where
    a column does not apply). Raises ReportError when no trace can be read."""
    if not traces:
        raise ReportError("load_calls(): no trace file or directory given")
    cmd = [os.fspath(executable()), "export", "--format", "csv", *(os.fspath(t) for t in traces)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    # 0: fine; 3: some traces could not be read (the others are there); 2: nothing readable.
    if done.returncode not in (0, 3):
        raise ReportError(f"asyncwatch export failed (status {done.returncode}): {done.stderr.strip()}")
    try:
        import pandas  # type: ignore[import-not-found]
    except ImportError:
        rows: List[Dict[str, Any]] = []
        for row in csv.DictReader(io.StringIO(done.stdout)):
            rows.append({k: (int(v) if v != "" else None) if k in _INT_COLUMNS else (v if v != "" else None)
                         for k, v in row.items()})
        return rows
    # Whole numbers stay whole where a column can be empty (pandas' nullable Int64).
    return pandas.read_csv(io.StringIO(done.stdout), dtype={"stream": str, "call_site": str, "kernel": str,
                                                             "bytes": "Int64", "finding_rank": "Int64"})


load_trace = load_calls
