"""Pausing and resuming recording from Python: asyncwatch_set_recording of asyncwatch/control.h.

The function exists only in a process that runs under asyncwatch (libasyncwatch.so preloaded, e.g.
`asyncwatch run -- python train.py`); it is looked up in the running process with ctypes. Without
asyncwatch every call is a no-op, and the first one says so with a NotActiveWarning.
"""
from __future__ import annotations

import contextlib
import ctypes
import threading
import warnings
from typing import Callable, Iterator, Optional


class NotActiveWarning(RuntimeWarning):
    """The control API was used in a process that does not run under asyncwatch."""


_lock = threading.Lock()
_looked_up = False
_set_recording: Optional[Callable[[int], int]] = None
_warned = False


def _function() -> Optional[Callable[[int], int]]:
    global _looked_up, _set_recording
    with _lock:
        if not _looked_up:
            try:
                fn = ctypes.CDLL(None).asyncwatch_set_recording  # the process's global scope
                fn.argtypes = [ctypes.c_int]
                fn.restype = ctypes.c_int
                _set_recording = fn
            except (AttributeError, OSError):
                _set_recording = None
            _looked_up = True
        return _set_recording


def active() -> bool:
    """True when this process runs under asyncwatch (its preload library is loaded)."""
    return _function() is not None


def recording(on: bool) -> Optional[bool]:
    """Resumes (True) or pauses (False) recording for the whole process.

    Returns the previous state (True: it was recording), or None when the process does not run under
    asyncwatch; then nothing happens, and the first such call warns once (NotActiveWarning).
    Calls made while paused go straight to CUDA and are not in the trace; the report says how long
    recording was paused.
    """
    fn = _function()
    if fn is None:
        _warn_once()
        return None
    return fn(1 if on else 0) != 0


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """`with asyncwatch.paused():` records nothing inside the block, then restores the previous state
    (so nested pauses stay paused until the outermost block ends)."""
    was = recording(False)
    try:
        yield
    finally:
        if was:
            recording(True)


def _warn_once() -> None:
    global _warned
    with _lock:
        if _warned:
            return
        _warned = True
    warnings.warn(
        "asyncwatch.recording()/paused(): this process does not run under asyncwatch (libasyncwatch.so is "
        "not preloaded), so there is no recording to pause or resume and these calls do nothing; run it "
        "with `asyncwatch run -- python ...` (this is said once per process)",
        NotActiveWarning, stacklevel=3)
