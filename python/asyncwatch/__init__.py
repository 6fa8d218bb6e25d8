"""asyncwatch: which "asynchronous" CUDA calls were in fact synchronous, why, and where.

The package bundles the asyncwatch command, its preload library and the simulated CUDA driver and
runtime (`asyncwatch run -- python train.py`, `python -m asyncwatch ...`), and offers:

- recording(False/True), paused(), active(): the control API, for the process under asyncwatch;
- load_report(path), parse_report(text), report(*traces): the JSON report as dataclasses;
- load_trace(*traces) (also named load_calls): every call as a table (a pandas DataFrame when
  pandas is installed);
- executable(), preload_library(), sim_dir(), prefix(): the bundled files;
- a pytest plugin: `pytest --asyncwatch [--asyncwatch-fail-on IDS] [--asyncwatch-sim]`.

docs/python.md in the source repository describes all of it.
"""
from ._binaries import executable, preload_library, prefix, sim_dir
from ._calls import load_calls, load_trace
from ._control import NotActiveWarning, active, paused, recording
from ._report import (BlockedTime, Evidence, Finding, FindingProcess, Frame, Process, Report, ReportError,
                      Summary, Thresholds, WaitedFor, load_report, parse_report, report)

try:
    from importlib.metadata import version as _version

    __version__ = _version("asyncwatch")
except Exception:  # not installed as a distribution (a source checkout on sys.path)
    __version__ = "unknown"

__all__ = [
    "BlockedTime", "Evidence", "Finding", "FindingProcess", "Frame", "NotActiveWarning", "Process", "Report",
    "ReportError", "Summary", "Thresholds", "WaitedFor", "active", "executable", "load_calls", "load_report",
    "load_trace", "parse_report",
    "paused", "preload_library", "prefix", "recording", "report", "sim_dir",
]
