"""pytest plugin: `pytest --asyncwatch [--asyncwatch-fail-on IDS] [--asyncwatch-sim] [--asyncwatch-dir DIR]`.

The preload library must be in the process before CUDA is, so with --asyncwatch the plugin
re-executes pytest (same interpreter, same arguments, same pid) with LD_PRELOAD set, at its
earliest hook (before any conftest is imported and before pytest captures output). The re-executed
session records itself and every process it starts; at the end the plugin runs the bundled
`asyncwatch report` on the traces, prints the findings in pytest's summary and fails the session
when a finding named by --asyncwatch-fail-on appears. Under `asyncwatch run -- pytest --asyncwatch`
the library is already loaded and nothing is re-executed. docs/python.md describes it.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, Generator, List, Optional, Set, Tuple

import pytest

from ._binaries import executable, preload_library, sim_dir
from ._control import active
from ._report import Finding, Report, ReportError, parse_report

# Set for the re-executed pytest: where its traces go, its pid (a worker or a test's subprocess
# inherits the environment but is not the session), and whether the directory is ours to remove.
_ENV_DIR = "ASYNCWATCH_PYTEST_DIR"
_ENV_PID = "ASYNCWATCH_PYTEST_PID"
_ENV_TEMP = "ASYNCWATCH_PYTEST_TEMP_DIR"
_SEVERITY_RANK = {"note": 0, "warning": 1, "error": 2}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("asyncwatch", "asyncwatch (asynchronous CUDA calls that ran synchronously)")
    group.addoption("--asyncwatch", action="store_true", default=False,
                    help="run the session under asyncwatch (pytest is re-executed with its preload library) "
                         "and print the findings in the summary")
    group.addoption("--asyncwatch-fail-on", metavar="IDS", default=None,
                    help="fail the session when a finding with one of these ids (comma separated) or of at "
                         "least this severity (error, warning, note) appears; implies --asyncwatch")
    group.addoption("--asyncwatch-sim", action="store_true", default=False,
                    help="run on asyncwatch's simulated CUDA driver and runtime (no GPU); implies --asyncwatch")
    group.addoption("--asyncwatch-per-test", action="store_true", default=False,
                    help="also check after each test and fail the test (or its teardown) during which a "
                         "--asyncwatch-fail-on finding appeared (one analyzer run per test phase)")
    group.addoption("--asyncwatch-dir", metavar="DIR", default=None,
                    help="keep the traces in DIR (default: a temporary directory, removed at the end)")


def _enabled(options: Any) -> bool:
    return bool(options.asyncwatch or options.asyncwatch_fail_on or options.asyncwatch_sim
                or options.asyncwatch_per_test)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser,
                                  args: List[str]) -> Generator[None, None, None]:
    # A wrapper that runs first: before capture.py's wrapper redirects fds 1 and 2, and before any
    # conftest imports CUDA.
    options = early_config.known_args_namespace
    if _enabled(options):
        if os.environ.get(_ENV_PID) and not _is_session_process():
            pass  # a worker or subprocess of a traced session: traced, and reported by the session
        elif _is_session_process() or active():
            _Session.start(early_config, options)
        else:
            _reexec(early_config, options)
    yield


def _is_session_process() -> bool:
    return os.environ.get(_ENV_PID) == str(os.getpid())


def _check_fail_on(ids: str) -> None:
    """Lets the analyzer itself reject an unknown id before the session runs (it checks --fail-on
    before it reads any trace)."""
    done = subprocess.run([os.fspath(executable()), "report", "--fail-on", ids, os.devnull],
                          capture_output=True, text=True)
    if "--fail-on" in done.stderr:
        raise pytest.UsageError(f"--asyncwatch-fail-on: {done.stderr.strip().replace('asyncwatch: --fail-on: ', '')}")


def _check_options(options: Any) -> None:
    if options.asyncwatch_per_test and not options.asyncwatch_fail_on:
        raise pytest.UsageError("--asyncwatch-per-test needs --asyncwatch-fail-on (which findings fail a test)")
    if options.asyncwatch_fail_on:
        _check_fail_on(options.asyncwatch_fail_on)


def _reexec(config: pytest.Config, options: Any) -> None:
    if tuple(config.invocation_params.args) != tuple(sys.argv[1:]):
        raise pytest.UsageError(
            "--asyncwatch re-executes pytest under asyncwatch, which needs pytest started from the command "
            "line; from pytest.main(), run the whole program under asyncwatch instead: "
            "asyncwatch run -- python ...")
    _check_options(options)
    env = dict(os.environ)
    if options.asyncwatch_dir:
        trace_dir = Path(options.asyncwatch_dir).resolve()
        trace_dir.mkdir(parents=True, exist_ok=True)
    else:
        trace_dir = Path(tempfile.mkdtemp(prefix="asyncwatch-pytest-"))
        env[_ENV_TEMP] = "1"
    env[_ENV_DIR] = str(trace_dir)
    env[_ENV_PID] = str(os.getpid())  # exec keeps the pid
    env["ASYNCWATCH_OUTPUT_DIR"] = str(trace_dir)
    env["LD_PRELOAD"] = os.pathsep.join(p for p in (str(preload_library()), env.get("LD_PRELOAD")) if p)
    if options.asyncwatch_sim:
        env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(sim_dir()), env.get("LD_LIBRARY_PATH")) if p)
    # sys.orig_argv keeps the interpreter's own options (-X, -W) and how pytest was started.
    argv = list(getattr(sys, "orig_argv", [])) or [sys.executable, "-m", "pytest", *sys.argv[1:]]
    argv[0] = sys.executable
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, argv, env)


class _Session:
    """The traced session's side: which traces are new, the report, the summary, the exit status."""

    def __init__(self, trace_dir: Path, remove_dir: bool, fail_on: Optional[str], sim: bool) -> None:
        self.trace_dir = trace_dir
        self.remove_dir = remove_dir
        self.fail_on = fail_on
        self.sim = sim
        self.before: Set[str] = set(p.name for p in trace_dir.glob("*.awtrace"))
        self.report: Optional[Report] = None
        self.failing: List[Finding] = []
        self.problem: Optional[str] = None
        self.no_device = False  # the analyzer exited 4: no CUDA call succeeded
        self.traces: List[Path] = []
        self.per_test = False
        self.seen: Dict[Tuple[Any, ...], int] = {}  # --asyncwatch-per-test: calls per finding so far

    @classmethod
    def start(cls, config: pytest.Config, options: Any) -> "_Session":
        if not active():
            raise pytest.UsageError(
                "asyncwatch: the re-executed pytest runs without libasyncwatch.so (the dynamic loader said "
                f"why above; LD_PRELOAD={os.environ.get('LD_PRELOAD', '')})")
        if _is_session_process():
            trace_dir, remove = Path(os.environ[_ENV_DIR]), os.environ.get(_ENV_TEMP) == "1"
        else:  # under `asyncwatch run -- pytest --asyncwatch`: its directory, its run prints its own report
            trace_dir, remove = Path(os.environ.get("ASYNCWATCH_OUTPUT_DIR", ".")).resolve(), False
            _check_options(options)
        session = cls(trace_dir, remove, options.asyncwatch_fail_on, options.asyncwatch_sim)
        session.per_test = options.asyncwatch_per_test
        config.pluginmanager.register(session, "asyncwatch-session")
        return session

    def pytest_report_header(self) -> str:
        where = "a temporary directory" if self.remove_dir else str(self.trace_dir)
        return f"asyncwatch: tracing this session{' on the simulator' if self.sim else ''}, traces in {where}"

    def _new_traces(self) -> List[Path]:
        return sorted(p for p in self.trace_dir.glob("*.awtrace") if p.name not in self.before)

    def _new_named_calls(self) -> List[Tuple[int, Finding]]:
        """--asyncwatch-per-test: the listed findings whose call count grew since the last check,
        from the traces as they are now (the running processes' traces are read up to their last
        completed call). Without symbols: fast, and the same grouping at every check."""
        traces = self._new_traces()
        if not traces:
            return []
        cmd = [os.fspath(executable()), "report", "--format", "json", *(str(t) for t in traces)]
        done = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, ASYNCWATCH_NO_SYMBOLS="1"))
        if done.returncode != 0:
            return []  # e.g. a trace a subprocess has only just created; the session's report says more
        grown = []
        for f in parse_report(done.stdout).findings:
            if not self._named(f):
                continue
            key = (f.id, f.api, f.direction, f.call_site.address if f.call_site else None)
            if f.count > self.seen.get(key, 0):
                grown.append((f.count - self.seen.get(key, 0), f))
            self.seen[key] = f.count
        return grown

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: Any) -> Generator[None, Any, None]:
        outcome = yield
        report = outcome.get_result()
        if not self.per_test or report.when == "setup":  # setup is checked with the call
            return
        grown = self._new_named_calls()
        if not grown:
            return
        # The per-test check reads no symbols (fast): no file:line to show; the session summary has it.
        text = "\n".join(f"asyncwatch: {n} new call(s) with a --asyncwatch-fail-on finding: "
                         f"{f if f.location != '??' else f'{f.severity}: {f.message} [{f.id}]'}" for n, f in grown)
        if report.failed:
            report.sections.append(("asyncwatch", text))
        else:
            report.outcome = "failed"
            report.longrepr = text

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.traces = self._new_traces()
        if not self.traces:
            return
        cmd = [os.fspath(executable()), "report", "--format", "json"]
        if self.fail_on:
            cmd += ["--fail-on", self.fail_on]
        done = subprocess.run(cmd + [str(t) for t in self.traces], capture_output=True, text=True)
        try:
            # 0 fine, 1 --fail-on matched, 3 some traces unreadable, 4 no usable device: a report each.
            if done.returncode not in (0, 1, 3, 4) or not done.stdout.strip():
                raise ReportError(done.stderr.strip())
            self.report = parse_report(done.stdout)
        except (ReportError, ValueError) as e:
            self.problem = f"asyncwatch report failed (status {done.returncode}): {e}"
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
            return
        if done.returncode == 1:  # the analyzer's --fail-on matched
            self.failing = [f for f in self.report.findings if self._named(f)]
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        elif done.returncode == 4:  # no CUDA call succeeded: an empty report must not pass a gate
            self.no_device = True
            if self.fail_on and session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _named(self, finding: Finding) -> bool:
        items = [i for i in (self.fail_on or "").split(",") if i]
        levels = [_SEVERITY_RANK[i] for i in items if i in _SEVERITY_RANK]
        return finding.id in items or (bool(levels) and _SEVERITY_RANK.get(finding.severity, -1) >= min(levels))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        tr = terminalreporter
        tr.write_sep("=", "asyncwatch")
        if self.problem:
            tr.write_line(self.problem, red=True)
            return
        if self.report is None:
            tr.write_line("asyncwatch: the session made no CUDA calls (no trace was written)")
            return
        r = self.report
        pids = ", ".join(str(p.pid) for p in r.processes)
        simulated = any(p.simulated for p in r.processes)
        tr.write_line(f"asyncwatch{' (simulated, no GPU)' if simulated else ''}: {len(r.processes)} traced "
                      f"process(es) (pid {pids}), {r.summary.async_calls} asynchronous calls, "
                      f"{r.summary.async_calls_blocking} of them blocked; {len(r.findings)} finding(s)")
        if simulated:
            tr.write_line("asyncwatch: recorded on the simulated CUDA driver and runtime (--asyncwatch-sim): times "
                          "are the simulator's model, not a GPU's", yellow=True)
        if self.no_device:
            tr.write_line("asyncwatch: no CUDA call succeeded: no usable CUDA driver or device; the report is empty "
                          "for that reason (use --asyncwatch-sim without a GPU)"
                          + ("; the session fails (--asyncwatch-fail-on)" if self.fail_on else ""), red=True)
        for p in r.processes:
            for note in p.notes:
                if p.pid == os.getpid() and "did not exit cleanly" in note:
                    continue  # this process, still running
                tr.write_line(f"  note (pid {p.pid}): {note}")
        for f in r.findings:
            named = f in self.failing
            tr.write_line(("FAIL " if named else "") + str(f), red=named, yellow=not named and f.severity == "warning")
            site = f"; call site: {f.call_site}" if f.call_site else ""
            tr.write_line(f"    {f.count} call(s), blocked {f.blocked_ns.total / 1e6:.1f} ms in all{site}")
        if self.failing:
            ids = ", ".join(dict.fromkeys(f.id for f in self.failing))
            tr.write_line(f"asyncwatch: the session fails: {ids} (--asyncwatch-fail-on {self.fail_on})", red=True)
        if not self.remove_dir:
            tr.write_line(f"asyncwatch: traces in {self.trace_dir} (asyncwatch report {self.trace_dir})")

    def pytest_unconfigure(self) -> None:
        if self.remove_dir:
            shutil.rmtree(self.trace_dir, ignore_errors=True)

