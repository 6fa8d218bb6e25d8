"""Where the bundled binaries are: the package directory is an asyncwatch install tree.

site-packages/asyncwatch/bin/asyncwatch finds ../lib/libasyncwatch.so and ../lib/asyncwatch/sim/
by itself, exactly as in any other install tree (docs/contracts.md).
"""
from __future__ import annotations

from pathlib import Path

_PREFIX = Path(__file__).resolve().parent


def prefix() -> Path:
    """The install tree inside the package (bin/, lib/, include/, share/, lib/cmake/asyncwatch/)."""
    return _PREFIX


def _bundled(relative: str) -> Path:
    path = _PREFIX / relative
    if not path.exists():
        raise FileNotFoundError(
            f"asyncwatch: {path} is missing: this copy of the Python package has no bundled binaries "
            "(install the wheel, or `pip install .` from the repository, which builds them)")
    return path


def executable() -> Path:
    """The asyncwatch command."""
    return _bundled("bin/asyncwatch")


def preload_library() -> Path:
    """libasyncwatch.so, the library asyncwatch preloads into the traced program."""
    return _bundled("lib/libasyncwatch.so")


def sim_dir() -> Path:
    """The simulated CUDA driver and runtime (`asyncwatch run --sim`; tests only)."""
    return _bundled("lib/asyncwatch/sim")
