"""The line table decoder against the interpreter: usage: python3.X linetable_test.py HELPER.so

Compiles the sources of standard library modules (code we did not write), and for every code object
in them decodes its raw co_linetable with asyncwatch/python_lines.h (through the helper) and compares
the location of every instruction with CPython's own: co_positions() (3.11+: line, end line,
columns) or co_lines() (3.10: the line). Exit 1 on the first difference.
"""
import ctypes
import os
import sys
import sysconfig

lib = ctypes.CDLL(sys.argv[1])
lib.aw_decode.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                          ctypes.POINTER(ctypes.c_int)]
FORMAT = 1 if sys.version_info < (3, 11) else 2

MODULES = ["argparse", "asyncio/base_events", "collections/__init__", "dataclasses", "decimal",
           "_pydecimal", "dis", "email/_header_value_parser", "enum", "inspect", "json/decoder",
           "logging/__init__", "pathlib", "pickle", "re/_parser" if sys.version_info >= (3, 11) else "sre_parse",
           "subprocess", "tarfile", "threading", "traceback", "typing", "unittest/mock", "zipfile"]


def reference(code):
    """Per code unit: (line, end line, column, end column), -1 for None."""
    units = len(code.co_code) // 2
    if FORMAT == 2:
        out = [tuple(-1 if v is None else v for v in p) for p in code.co_positions()]
        assert len(out) == units, (code, len(out), units)
        return out
    out = [(-1, -1, -1, -1)] * units
    for start, end, line in code.co_lines():
        for i in range(start // 2, end // 2):
            out[i] = (-1 if line is None else line,) * 2 + (-1, -1)
    return out


def code_objects(code):
    yield code
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            yield from code_objects(const)


def main():
    stdlib = sysconfig.get_paths()["stdlib"]
    objects = instructions = 0
    for module in MODULES:
        path = os.path.join(stdlib, module + ".py")
        if not os.path.exists(path):
            continue
        with open(path, "rb") as f:
            top = compile(f.read(), path, "exec")
        for code in code_objects(top):
            want = reference(code)
            table = code.co_linetable
            out = (ctypes.c_int * (4 * len(want)))()
            rc = lib.aw_decode(FORMAT, table, len(table), code.co_firstlineno, len(want), out)
            if rc != 0:
                print(f"FAIL {path}: {code.co_name} line {code.co_firstlineno}: decoder returned {rc}")
                sys.exit(1)
            for i, w in enumerate(want):
                got = tuple(out[4 * i:4 * i + 4])
                if FORMAT == 1:
                    got, w = got[:1], w[:1]
                if got != w:
                    print(f"FAIL {path}: {code.co_qualname if FORMAT == 2 else code.co_name} "
                          f"(line {code.co_firstlineno}) instruction {i}: decoded {got}, CPython {w}")
                    sys.exit(1)
            objects += 1
            instructions += len(want)
    if objects < 1000:
        print(f"FAIL: only {objects} code objects found under {stdlib}")
        sys.exit(1)
    print(f"ok: {objects} code objects, {instructions} instructions of {len(MODULES)} stdlib modules "
          f"decoded as CPython {sys.version.split()[0]} does")


main()
