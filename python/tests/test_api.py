"""The Python API of the installed package: bundled files, the CLI entry points, the control API
and the report dataclasses."""
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import asyncwatch
from conftest import GOLDEN, SESSIONS

# Reports the analyzer's golden tests compare byte for byte (the others there are normalized).
GOLDEN_REPORTS = ["seed-pageable", "seed-pinned", "mixed", "crashed"]
CONSOLE_SCRIPT = Path(sys.executable).parent / "asyncwatch"


def test_the_package_is_an_install_tree() -> None:
    prefix = asyncwatch.prefix()
    assert asyncwatch.executable() == prefix / "bin" / "asyncwatch"
    assert asyncwatch.preload_library() == prefix / "lib" / "libasyncwatch.so"
    assert (asyncwatch.sim_dir() / "libcuda.so.1").is_file()
    assert (asyncwatch.sim_dir() / "libcudart.so.13").is_file()
    assert (prefix / "include" / "asyncwatch" / "control.h").is_file()
    assert (prefix / "lib" / "cmake" / "asyncwatch" / "asyncwatchConfig.cmake").is_file()
    assert asyncwatch.executable().stat().st_mode & 0o111


def test_console_script_and_python_m_run_the_bundled_command() -> None:
    for cmd in ([str(CONSOLE_SCRIPT), "--version"], [sys.executable, "-m", "asyncwatch", "--version"]):
        done = subprocess.run(cmd, capture_output=True, text=True, check=True)
        assert done.stdout.strip() == asyncwatch.__version__
    usage = subprocess.run([sys.executable, "-m", "asyncwatch", "run", "--help"], capture_output=True, text=True)
    assert usage.returncode == 0 and "Usage: asyncwatch run" in usage.stdout
    bad = subprocess.run([str(CONSOLE_SCRIPT), "report", "--no-such-option"], capture_output=True, text=True)
    assert bad.returncode == 2


@pytest.mark.parametrize("name", GOLDEN_REPORTS)
def test_load_report_reads_the_golden_reports(name: str) -> None:
    report = asyncwatch.load_report(GOLDEN / f"{name}.json")
    raw = json.loads((GOLDEN / f"{name}.json").read_text())
    assert report.schema_version == 1 and report.tool_version == raw["tool_version"]
    assert [f.id for f in report.findings] == [f["id"] for f in raw["findings"]]
    assert report.summary.findings == len(report.findings)
    for f, r in zip(report.findings, raw["findings"]):
        assert isinstance(f, asyncwatch.Finding) and isinstance(f.blocked_ns, asyncwatch.BlockedTime)
        assert f.blocked_ns.total == r["blocked_ns"]["total"] and f.count == r["count"]
        assert len(f.stack) == len(r["stack"]) and all(isinstance(fr, asyncwatch.Frame) for fr in f.stack)
        assert str(f).endswith(f"[{f.id}]")


def test_seed_report_fields() -> None:
    report = asyncwatch.load_report(GOLDEN / "seed-pageable.json")
    dtoh = next(f for f in report.findings if f.direction == "DtoH")
    assert (dtoh.id, dtoh.host_memory, dtoh.cause) == ("pageable-async-copy", "pageable", "waited-for-stream")
    assert dtoh.waited_for == (asyncwatch.WaitedFor(kernel="dummy", count=1),)
    assert dtoh.call_site is not None and dtoh.call_site.module == "/work/app/seed"
    assert report.with_id("pageable-async-copy") == [f for f in report.findings if f.id == "pageable-async-copy"]
    assert report.processes[0].closed_cleanly and report.thresholds is not None


def test_report_runs_the_command_on_traces(clean_env: dict) -> None:
    for name in GOLDEN_REPORTS:
        ran = asyncwatch.report(GOLDEN / f"{name}.awtrace", env=clean_env)
        golden = asyncwatch.load_report(GOLDEN / f"{name}.json")
        assert ran.findings == golden.findings and ran.summary == golden.summary
    both = asyncwatch.report(GOLDEN / "seed-pageable.awtrace", GOLDEN / "mixed.awtrace", env=clean_env)
    assert len(both.processes) == 2
    strict = asyncwatch.report(GOLDEN / "mixed.awtrace", options=["--min-blocked-us", "1000000"], env=clean_env)
    assert len(strict.findings) < len(asyncwatch.report(GOLDEN / "mixed.awtrace", env=clean_env).findings)


def test_bad_input_is_a_clear_error(scratch: Path) -> None:
    with pytest.raises(asyncwatch.ReportError, match="not an asyncwatch report"):
        asyncwatch.parse_report('{"schema": "something-else"}')
    raw = json.loads((GOLDEN / "seed-pageable.json").read_text())
    with pytest.raises(asyncwatch.ReportError, match="schema_version 2"):
        asyncwatch.parse_report(dict(raw, schema_version=2))
    broken = json.loads(json.dumps(raw))
    del broken["findings"][0]["count"]
    with pytest.raises(asyncwatch.ReportError, match=r"report\.findings\[0\]: no key 'count'"):
        asyncwatch.parse_report(broken)
    broken = json.loads(json.dumps(raw))
    broken["findings"][0]["blocked_ns"]["total"] = "1 s"
    with pytest.raises(asyncwatch.ReportError, match=r"blocked_ns\.total: expected int"):
        asyncwatch.parse_report(broken)
    (scratch / "x.json").write_text("not json")
    with pytest.raises(asyncwatch.ReportError, match="not JSON"):
        asyncwatch.load_report(scratch / "x.json")
    with pytest.raises(asyncwatch.ReportError, match="asyncwatch report failed"):
        asyncwatch.report(GOLDEN / "not-a-trace.awtrace")
    with pytest.raises(asyncwatch.ReportError, match="no trace"):
        asyncwatch.report()


def test_keys_of_later_compatible_versions_are_ignored() -> None:
    raw = json.loads((GOLDEN / "mixed.json").read_text())
    raw["new_top_level"] = 1
    raw["findings"][0]["new_key"] = {"x": 1}
    raw["processes"][0]["new_key"] = []
    assert asyncwatch.parse_report(raw).findings == asyncwatch.load_report(GOLDEN / "mixed.json").findings
    assert dataclasses.is_dataclass(asyncwatch.parse_report(raw))


def test_control_api_without_asyncwatch_does_nothing_and_says_so_once(clean_env: dict) -> None:
    code = ("import asyncwatch\n"
            "print(asyncwatch.active(), asyncwatch.recording(False), asyncwatch.recording(True))\n"
            "with asyncwatch.paused():\n    pass\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=clean_env, check=True)
    assert done.stdout.split() == ["False", "None", "None"]
    assert done.stderr.count("NotActiveWarning") == 1
    assert "does not run under asyncwatch" in done.stderr


def test_control_api_under_asyncwatch_pauses_recording(scratch: Path, clean_env: dict) -> None:
    code = ("import sys; sys.path.insert(0, sys.argv[1])\n"
            "import asyncwatch, simcuda\n"
            "cuda = simcuda.Cuda()\n"
            "states = [asyncwatch.active()]\n"
            "with asyncwatch.paused():\n"
            "    states.append(asyncwatch.recording(False))\n"  # inside: already paused
            "    cuda.copy_after_kernel(50, 1 << 20, pinned=False)\n"
            "states.append(asyncwatch.recording(True))\n"  # after: recording again
            "print(*states)\n")
    done = subprocess.run(
        [str(CONSOLE_SCRIPT), "run", "--sim", "-o", str(scratch / "traces"), "--format", "json",
         "--report-output", str(scratch / "report.json"), "--", sys.executable, "-c", code, str(SESSIONS)],
        capture_output=True, text=True, env=clean_env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False", "True"]
    report = asyncwatch.load_report(scratch / "report.json")
    assert [p.pauses for p in report.processes] == [1]
    assert report.with_id("pageable-async-copy") == []  # the copy was made while paused


def test_load_calls_gives_one_row_per_call() -> None:
    """load_calls (asyncwatch export): as many rows as the report counts calls, typed numbers."""
    trace = GOLDEN / "seed-pageable.awtrace"
    calls = asyncwatch.load_calls(trace)
    report = json.loads(subprocess.run([os.fspath(asyncwatch.executable()), "report", "--format", "json", str(trace)],
                                       capture_output=True, text=True).stdout)
    assert len(calls) == sum(p["cuda_calls"] for p in report["processes"])
    rows = calls.to_dict("records") if hasattr(calls, "to_dict") else calls
    flagged = [r for r in rows if r["finding"] == "pageable-async-copy"]
    assert len(flagged) == 2 and all(r["bytes"] == 2147483648 and r["blocked_ns"] > 0 for r in flagged)
    with pytest.raises(asyncwatch.ReportError):
        asyncwatch.load_calls(GOLDEN / "not-a-trace.awtrace")
    assert asyncwatch.load_trace is asyncwatch.load_calls


def test_a_report_displays_in_a_notebook() -> None:
    """_repr_html_: a table row per finding, its texts escaped."""
    report = asyncwatch.load_report(GOLDEN / "seed-pageable.json")
    page = report._repr_html_()
    assert page.count("<tr><td>") == len(report.findings) > 0
    assert "<code>pageable-async-copy</code>" in page and "asyncwatch report" in page
