"""Checks what a shipped binary needs from the machine it runs on (tests package.binary-deps.*).

usage: check_binary_deps.py FILE --allow-needed SONAME[,SONAME...] --max-glibc X.Y

Fails when FILE has a DT_NEEDED entry outside the allowed list, or references a GLIBC_x.y symbol
version newer than X.Y (the wheel's manylinux tag, or the command's own floor). Prints both.
"""
import argparse
import re
import subprocess
import sys


def tool(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--allow-needed", required=True)
    ap.add_argument("--max-glibc", required=True)
    args = ap.parse_args()
    allowed = set(args.allow_needed.split(","))
    limit = tuple(int(x) for x in args.max_glibc.split("."))

    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", tool("readelf", "-dW", args.file))
    # Every GLIBC_x.y version in the dynamic symbol table: the functions the file imports (*UND*) and
    # the variables an executable copies from libc (`__libc_single_threaded`, defined in .bss under
    # glibc's version): both need that version of the machine's glibc. No file of ours defines one.
    refs = {}
    for line in tool("objdump", "-T", args.file).splitlines():
        m = re.search(r"\s(?:\(?)(GLIBC_(\d+)\.(\d+)(?:\.\d+)?)\)?\s+(\S+)$", line)
        if m:
            version = (int(m.group(2)), int(m.group(3)))
            refs.setdefault(version, []).append(m.group(4))
    highest = max(refs) if refs else (0, 0)
    print(f"{args.file}: NEEDED {', '.join(needed)}; highest glibc symbol version GLIBC_{highest[0]}.{highest[1]} "
          f"({', '.join(sorted(refs.get(highest, []))[:6])})")
    problems = [f"unexpected NEEDED {n} (allowed: {', '.join(sorted(allowed))})" for n in needed if n not in allowed]
    for version in sorted(v for v in refs if v > limit):
        problems.append(f"needs GLIBC_{version[0]}.{version[1]} > {args.max_glibc}: {', '.join(sorted(refs[version]))}")
    for p in problems:
        print(f"{args.file}: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
