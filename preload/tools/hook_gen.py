"""What the hook-table generators (gen_driver_hooks.py, gen_runtime_hooks.py) share: reading the
toolkit's headers and cuda_abi.h, their block of the version script, and writing or checking the
files they make. Python 3 standard library only."""
import os
import re

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
# The files both generators read or write.
SRC = os.path.join(ROOT, "preload", "src")
EXPORTS = os.path.join(SRC, "exports.map")
ABI = os.path.join(SRC, "cuda_abi.h")


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def abi_types(abi_header):
    """The types preload/src/cuda_abi.h defines (`using X =`, `struct X {`)."""
    with open(abi_header) as f:
        text = f.read()
    return set(re.findall(r"\busing\s+(\w+)\s*=", text)) | set(re.findall(r"\bstruct\s+(\w+)\s*\{", text))


def splice_exports(current, begin, end, symbols):
    """The version script `current` with the lines between the markers `begin` and `end` replaced
    by `symbols` (at most 104 columns a line); None when a marker is missing."""
    if begin not in current or end not in current:
        return None
    lines, line = [], "   "
    for sym in symbols:
        if len(line) + len(sym) + 2 > 104:
            lines.append(line)
            line = "   "
        line += f" {sym};"
    lines.append(line)
    return current[:current.index(begin) + len(begin)] + "\n".join(lines) + "\n" + current[current.index(end):]


def update(files, mode, tool):
    """Writes (`write`) or compares (`check`) each path -> text of `files`. Returns the exit status:
    1 when checking found a stale file (named on stdout), else 0."""
    stale = []
    for path, text in files.items():
        if os.path.exists(path):
            with open(path) as f:
                if f.read() == text:
                    continue
        if mode == "write":
            with open(path, "w") as f:
                f.write(text)
        stale.append(os.path.relpath(path, ROOT))
    if mode == "check" and stale:
        print(f"{tool}: stale: " + ", ".join(stale) + f" (run preload/tools/{tool}.py write)")
        return 1
    return 0
