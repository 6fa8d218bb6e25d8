"""The `asyncwatch` console script and `python -m asyncwatch`: the bundled command itself."""
from __future__ import annotations

import os
import sys

from ._binaries import executable


def main() -> None:
    try:
        exe = executable()
    except FileNotFoundError as e:
        sys.exit(str(e))  # status 1, the message on stderr
    sys.stdout.flush()
    sys.stderr.flush()
    # exec, not a child: signals, the exit status and the terminal go to the command unchanged.
    os.execv(exe, ["asyncwatch", *sys.argv[1:]])
