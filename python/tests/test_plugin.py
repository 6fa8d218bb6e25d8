"""The pytest plugin, on the simulator: a session that must fail, one that must pass, and bad input."""
import os
import subprocess
import sys
from pathlib import Path

import ctypes

import pytest

import asyncwatch
from conftest import SESSIONS


def run_pytest(scratch: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    env = dict(env, TMPDIR=str(scratch))  # the plugin's temporary trace directory goes there
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
                          capture_output=True, text=True, env=env, cwd=scratch)


def leftovers(scratch: Path) -> list:
    return [p.name for p in scratch.iterdir() if p.name.startswith("asyncwatch-pytest-")]


def test_a_listed_finding_fails_the_session(scratch: Path, clean_env: dict) -> None:
    done = run_pytest(scratch, clean_env, "--asyncwatch-sim", "--asyncwatch-fail-on", "pageable-async-copy",
                      str(SESSIONS / "session_pageable.py"))
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "1 passed" in out  # the test itself passed; the finding fails the session
    assert "= asyncwatch =" in out
    assert "FAIL " in out and "[pageable-async-copy]" in out and "device to host, 1.0 MiB" in out
    assert "the session fails: pageable-async-copy" in out
    # Simulated figures say so; a call site without a module shows no made-up address.
    assert "asyncwatch (simulated, no GPU): 1 traced process" in out and "the simulator's model" in out
    assert " 0x0" not in out
    assert leftovers(scratch) == []


def test_a_clean_session_passes(scratch: Path, clean_env: dict) -> None:
    done = run_pytest(scratch, clean_env, "--asyncwatch-sim", "--asyncwatch-fail-on", "pageable-async-copy",
                      str(SESSIONS / "session_pinned.py"))
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "2 passed" in out and "= asyncwatch =" in out and "1 traced process" in out
    assert "[pageable-async-copy]" not in out and "FAIL " not in out
    assert leftovers(scratch) == []


def test_per_test_fails_the_test_that_made_the_finding(scratch: Path, clean_env: dict) -> None:
    done = run_pytest(scratch, clean_env, "--asyncwatch-sim", "--asyncwatch-fail-on", "pageable-async-copy",
                      "--asyncwatch-per-test", "-rA", str(SESSIONS / "session_mixed.py"))
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "1 failed, 2 passed" in out
    assert "FAILED " in out and "session_mixed.py::test_pageable_copy" in out
    assert "PASSED " in out and "test_first_pinned_copy" in out and "test_second_pinned_copy" in out
    assert "1 new call(s) with a --asyncwatch-fail-on finding" in out and "[pageable-async-copy]" in out
    assert "finding: ??" not in out  # no unresolved location in the per-test message
    usage = run_pytest(scratch, clean_env, "--asyncwatch-sim", "--asyncwatch-per-test", str(SESSIONS / "session_mixed.py"))
    assert usage.returncode == 4 and "--asyncwatch-per-test needs --asyncwatch-fail-on" in usage.stderr


def test_findings_are_reported_without_fail_on_and_traces_kept(scratch: Path, clean_env: dict) -> None:
    traces = scratch / "traces"
    done = run_pytest(scratch, clean_env, "--asyncwatch-sim", "--asyncwatch-dir", str(traces),
                      str(SESSIONS / "session_pageable.py"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[pageable-async-copy]" in done.stdout and "FAIL " not in done.stdout
    assert f"traces in {traces}" in done.stdout
    # The trace of the finished session reads the same with the API; it was closed cleanly at exit.
    report = asyncwatch.report(traces)
    assert report.with_id("pageable-async-copy") and all(p.closed_cleanly for p in report.processes)


def test_an_unknown_finding_id_is_rejected_before_the_session_runs(scratch: Path, clean_env: dict) -> None:
    done = run_pytest(scratch, clean_env, "--asyncwatch-sim", "--asyncwatch-fail-on", "pageable-async-copy,no-such-id",
                      str(SESSIONS / "session_pageable.py"))
    assert done.returncode == 4  # pytest's usage error
    assert "unknown finding id or severity 'no-such-id'" in done.stderr
    assert "passed" not in done.stdout
    assert leftovers(scratch) == []


def test_without_the_option_nothing_is_traced(scratch: Path, clean_env: dict) -> None:
    env = dict(clean_env, LD_LIBRARY_PATH=str(asyncwatch.sim_dir()))
    done = run_pytest(scratch, env, str(SESSIONS / "session_pageable.py"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "asyncwatch" not in done.stdout
    assert not list(scratch.glob("**/*.awtrace"))


def test_no_usable_device_fails_a_gate(scratch: Path, clean_env: dict) -> None:
    """Without a GPU and without --asyncwatch-sim, every CUDA call fails: the analyzer exits 4 and
    the plugin reports it (not an internal error, status 3); with --asyncwatch-fail-on the session
    fails."""
    try:
        ctypes.CDLL("libcuda.so.1")
        pytest.skip("this machine has a CUDA driver")
    except OSError:
        pass
    try:
        ctypes.CDLL("libcudart.so.13")
    except OSError:
        pytest.skip("no CUDA runtime (libcudart.so.13) on the library path")
    gate = run_pytest(scratch, clean_env, "--asyncwatch", "--asyncwatch-fail-on", "warning",
                      str(SESSIONS / "session_no_device.py"))
    out = gate.stdout
    assert gate.returncode == 1, out + gate.stderr
    assert "1 passed" in out and "no CUDA call succeeded" in out and "the session fails" in out
    plain = run_pytest(scratch, clean_env, "--asyncwatch", str(SESSIONS / "session_no_device.py"))
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert "no CUDA call succeeded" in plain.stdout and "the session fails" not in plain.stdout
    assert leftovers(scratch) == []
