"""The JSON report (schema asyncwatch-report, version 1: docs/report-json.md) as Python objects.

load_report(path) and parse_report(text_or_dict) read a report that `asyncwatch report --format json`
or `asyncwatch run --format json` wrote; report(*traces) runs the bundled command on traces. Keys
added by later compatible versions are ignored; a different schema or schema_version is an error.
"""
from __future__ import annotations

import dataclasses
import html
import json
import os
import subprocess
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Tuple, Type, TypeVar, Union, cast, get_type_hints

from ._binaries import executable

SCHEMA = "asyncwatch-report"
SCHEMA_VERSION = 1

PathLike = Union[str, "os.PathLike[str]"]


class ReportError(ValueError):
    """Not a report of the schema this package reads, or the command could not produce one."""


@dataclass(frozen=True)
class Frame:
    """One stack frame; function, file, line and module are None when unknown."""
    function: Optional[str]
    file: Optional[str]
    line: Optional[int]
    module: Optional[str]
    address: str

    def __str__(self) -> str:
        """As in the text report: `function at file:line (module)`, `??` for what is unknown."""
        text = self.function or "??"
        if self.file and self.line:
            text += f" at {self.file}:{self.line}"
        if self.module:
            return text + f" ({os.path.basename(self.module)})"
        # An address means something only with its module; 0x0 is "not recorded".
        return text if not self.address or self.address in ("0x0", "0") else text + f" {self.address}"


@dataclass(frozen=True)
class BlockedTime:
    """How long the calls of a finding blocked the host, in ns (long-host-callback: how long the
    function ran)."""
    total: int
    min: int
    median: int
    max: int


@dataclass(frozen=True)
class Evidence:
    checked: int
    completed_at_return: int


@dataclass(frozen=True)
class WaitedFor:
    kernel: str
    count: int


@dataclass(frozen=True)
class FindingProcess:
    pid: int
    count: int
    blocked_ns_total: int


@dataclass(frozen=True)
class Finding:
    """One group of calls at one call site (docs/findings.md has the ids)."""
    id: str
    severity: str
    message: str
    api: str
    driver_api: Optional[str]
    direction: Optional[str]
    host_memory: Optional[str]
    cause: Optional[str]
    kernel: Optional[str]
    count: int
    bytes: int
    blocked_ns: BlockedTime
    share_of_wall: float
    evidence: Evidence
    waited_for: Tuple[WaitedFor, ...]
    call_site: Optional[Frame]
    stack: Tuple[Frame, ...]
    processes: Tuple[FindingProcess, ...]
    stream_drained_before_return: Optional[int] = None
    outstanding_launches_max: Optional[int] = None

    @property
    def location(self) -> str:
        """file:line of the call site, as the text report begins its line (`??` when unknown)."""
        site = self.call_site
        return f"{site.file}:{site.line}" if site is not None and site.file and site.line else "??"

    def __str__(self) -> str:
        """The first line of the text report: `file:line: warning: message [id]`."""
        return f"{self.location}: {self.severity}: {self.message} [{self.id}]"


@dataclass(frozen=True)
class Process:
    """One traced process (one trace file)."""
    pid: int
    ppid: int
    executable: str
    command_line: str
    trace: str
    closed_cleanly: bool
    wall_ns: int
    device: Optional[str]
    simulated: bool
    records: int
    records_lost: int
    blocked_ns_total: int
    parent_pid_if_forked: Optional[int] = None
    exit_status: Optional[int] = None
    pauses: int = 0
    paused_ns: int = 0
    async_calls: int = 0
    async_calls_async: int = 0
    async_calls_blocking: int = 0
    notes: Tuple[str, ...] = ()
    no_usable_device: bool = False  # no CUDA call succeeded: no usable driver or device (exit status 4)


@dataclass(frozen=True)
class Summary:
    async_calls: int
    async_calls_async: int
    async_calls_blocking: int
    blocked_ns_total: int
    findings: int


@dataclass(frozen=True)
class Thresholds:
    min_blocked_ns: int
    inline_htod_bytes: int
    launch_queue_depth: int
    min_callback_ns: int
    implicit_sync_min_count: int


@dataclass(frozen=True)
class Report:
    """A whole report: the processes, the summary and the findings, ranked by blocked time."""
    schema_version: int
    tool_version: str
    processes: Tuple[Process, ...]
    summary: Summary
    findings: Tuple[Finding, ...]
    thresholds: Optional[Thresholds] = None

    def ids(self) -> List[str]:
        """The distinct finding ids, in rank order."""
        return list(dict.fromkeys(f.id for f in self.findings))

    def with_id(self, *ids: str) -> List[Finding]:
        """The findings with one of these ids."""
        return [f for f in self.findings if f.id in ids]

    def _repr_html_(self) -> str:
        """A notebook's display: the processes and a table of the findings, ranked."""
        esc = html.escape
        simulated = any(p.simulated for p in self.processes)
        head = (f"<p><b>asyncwatch report</b>{' (simulated, no GPU)' if simulated else ''}: "
                f"{len(self.processes)} process(es) (pid {esc(', '.join(str(p.pid) for p in self.processes))}), "
                f"{self.summary.async_calls} asynchronous calls, {self.summary.async_calls_blocking} of them "
                f"blocked; {len(self.findings)} finding(s)</p>")
        if not self.findings:
            return head
        rows = "".join(
            f"<tr><td>{i}</td><td>{esc(f.severity)}</td><td><code>{esc(f.id)}</code></td>"
            f"<td>{esc(f.location)}</td><td>{f.count}</td><td>{f.blocked_ns.total / 1e6:.1f}</td>"
            f"<td>{esc(f.message)}</td></tr>"
            for i, f in enumerate(self.findings, 1))
        return (head + "<table><thead><tr><th>#</th><th>severity</th><th>id</th><th>call site</th><th>calls</th>"
                "<th>blocked ms</th><th>message</th></tr></thead><tbody>" + rows + "</tbody></table>")


_T = TypeVar("_T")
_SCALARS: Dict[Any, Tuple[type, ...]] = {int: (int,), float: (int, float), str: (str,), bool: (bool,)}


def _convert(tp: Any, value: Any, where: str) -> Any:
    origin = getattr(tp, "__origin__", None)
    args: Tuple[Any, ...] = getattr(tp, "__args__", ())
    if origin is Union:  # Optional[X]
        if value is None:
            return None
        return _convert(next(a for a in args if a is not type(None)), value, where)
    if origin is tuple:
        if not isinstance(value, list):
            raise ReportError(f"{where}: expected a list, got {type(value).__name__}")
        return tuple(_convert(args[0], v, f"{where}[{i}]") for i, v in enumerate(value))
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _build(tp, value, where)
    if not isinstance(value, _SCALARS[tp]) or (tp is int and isinstance(value, bool)):
        raise ReportError(f"{where}: expected {tp.__name__}, got {json.dumps(value)[:60]}")
    return float(cast(float, value)) if tp is float else value  # JSON writes 0.0 as 0


def _build(cls: Type[_T], obj: Any, where: str) -> _T:
    if not isinstance(obj, dict):
        raise ReportError(f"{where}: expected an object, got {type(obj).__name__}")
    hints = get_type_hints(cls)
    kwargs: Dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]  # cls is a dataclass
        if f.name in obj:
            kwargs[f.name] = _convert(hints[f.name], obj[f.name], f"{where}.{f.name}")
        elif f.default is dataclasses.MISSING:
            raise ReportError(f"{where}: no key {f.name!r}")
    return cls(**kwargs)


def parse_report(data: Union[str, bytes, Dict[str, Any]]) -> Report:
    """A report from its JSON text or the already decoded object."""
    obj = json.loads(data) if isinstance(data, (str, bytes)) else data
    if not isinstance(obj, dict) or obj.get("schema") != SCHEMA:
        raise ReportError(f"not an asyncwatch report (schema {SCHEMA!r} expected)")
    if obj.get("schema_version") != SCHEMA_VERSION:
        raise ReportError(f"report schema_version {obj.get('schema_version')!r}: this asyncwatch package "
                          f"reads version {SCHEMA_VERSION}")
    return _build(Report, obj, "report")


def load_report(path: PathLike) -> Report:
    """Reads a JSON report file (`asyncwatch report --format json -o FILE ...`)."""
    with open(path, encoding="utf-8") as f:
        try:
            return parse_report(f.read())
        except json.JSONDecodeError as e:
            raise ReportError(f"{os.fspath(path)}: not JSON: {e}") from None


def report(*traces: PathLike, options: Iterable[str] = (), env: Optional[Dict[str, str]] = None) -> Report:
    """Runs the bundled `asyncwatch report --format json` on trace files or directories of traces.

    options are more command-line options, e.g. ["--min-blocked-us", "200"] (asyncwatch report
    --help). Raises ReportError when the command fails (no trace there, an invalid file).
    """
    if not traces:
        raise ReportError("report(): no trace file or directory given")
    cmd = [os.fspath(executable()), "report", "--format", "json", *options, *(os.fspath(t) for t in traces)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    # 0: fine; 1: a --fail-on finding exists (options may ask for it); 3: some traces could not be
    # read; 4: no CUDA call succeeded (no usable device): the report is complete in each. 2: invalid input.
    if done.returncode not in (0, 1, 3, 4) or not done.stdout.strip():
        raise ReportError(f"asyncwatch report failed (status {done.returncode}): {done.stderr.strip()}")
    return parse_report(done.stdout)
