"""Tests of the installed asyncwatch package (wheel): run with the venv's python -m pytest python/tests.
sessions/ holds the small test sessions that test_plugin.py runs under the plugin; they are not
collected here (their file names do not start with test_)."""
import os
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

REPO = Path(__file__).resolve().parents[2]
SESSIONS = Path(__file__).resolve().parent / "sessions"
GOLDEN = REPO / "analyzer" / "tests" / "golden"


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A temporary directory that is removed afterwards (pytest's tmp_path keeps old ones in /tmp)."""
    with tempfile.TemporaryDirectory(prefix="asyncwatch-pytest-test-") as d:
        yield Path(d)


@pytest.fixture
def clean_env() -> dict:
    """The environment without asyncwatch's variables (the simulator's kept: .ci/test sets ASYNCWATCH_SIM_HOST_WAIT)."""
    env = {k: v for k, v in os.environ.items()
           if (not k.startswith("ASYNCWATCH_") or k.startswith("ASYNCWATCH_SIM_")) and k not in ("LD_PRELOAD",)}
    return env
