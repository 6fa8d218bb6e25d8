#!/usr/bin/env python3
"""The hooked driver entry points as one table (preload/src/interpose/driver_hook_table.inc) and the
driver part of the library's version script (preload/src/exports.map), from the hook list
(preload/src/interpose/driver_hooks.txt) and the parameters the toolkit's cuda.h (and
cudaProfiler.h) declare.

  gen_driver_hooks.py write [--cuda DIR]   regenerate both files (DIR: /usr/local/cuda)
  gen_driver_hooks.py check [--cuda DIR]   both files are what `write` would make (exit 0; 1 naming
                                           the stale one; 77 when DIR has no cuda.h: skipped)

Parameters: each name's declaration in cuda.h, where a `#define cuFoo __CUDA_API_PTSZ(cuFoo_v2)`
maps the declared name to the entry point (cuMemcpyHtoD's declaration is cuMemcpyHtoD_v2's), and the
older forms declared literally in its `__CUDA_API_VERSION_INTERNAL` part (cuGetProcAddress with four
parameters, cuMemPrefetchAsync with a device). A per-thread form has its base's parameters. Types
are written as preload/src/cuda_abi.h has them: a type it defines stays, an enumeration passed by
value becomes `unsigned`, a pointer to a type it does not define becomes `void*` (constness kept):
the same calling convention, without the toolkit's headers. A name an older toolkit does not
declare keeps the types the table has (the table is the union over the toolkits it was generated
from). Python 3 standard library only.
"""
import argparse
import os
import re
import sys

sys.dont_write_bytecode = True  # run by ctest: no __pycache__ left in the tree
from hook_gen import ABI, EXPORTS, SRC, abi_types, splice_exports, strip_comments, update

SPEC = os.path.join(SRC, "interpose", "driver_hooks.txt")
TABLE = os.path.join(SRC, "interpose", "driver_hook_table.inc")

BUILTIN = {"void", "char", "int", "unsigned", "size_t", "float", "double", "long", "short"}
NAME = r"cu[A-Z]\w*"
DEFINE = re.compile(r"#\s*define\s+(" + NAME + r")\s+(?:__CUDA_API_PT[DS][SZ]\s*\(\s*)?(" + NAME + r")\b")
DECL = re.compile(r"\bCUresult\s+CUDAAPI\s+(" + NAME + r")\s*\(([^;{]*?)\)\s*;", re.S)


def read_spec():
    rows = []
    with open(SPEC) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].split()
            if not line:
                continue
            if len(line) != 4 or line[3] not in ("sync", "async") or line[1] not in ("-", "_ptds", "_ptsz"):
                sys.exit(f"{SPEC}:{n}: want: name per-thread(-|_ptds|_ptsz) record sync|async")
            rows.append(tuple(line))
    return rows


def declarations(cuda):
    path = os.path.join(cuda, "include", "cuda.h")
    if not os.path.exists(path):
        return None, None
    with open(path, encoding="utf-8", errors="replace") as f:
        text = strip_comments(f.read())
    profiler = os.path.join(cuda, "include", "cudaProfiler.h")  # cuProfilerStart/Stop
    if os.path.exists(profiler):
        with open(profiler, encoding="utf-8", errors="replace") as f:
            text = strip_comments(f.read()) + text
    # The part after the last `#if defined(__CUDA_API_VERSION_INTERNAL)` undefines the renames and
    # declares the older forms under their literal names.
    cut = text.rfind("#if defined(__CUDA_API_VERSION_INTERNAL)\n")
    main, old = (text[:cut], text[cut:]) if cut >= 0 else (text, "")
    rename = {m.group(1): m.group(2) for m in DEFINE.finditer(main)}
    decls = {}
    for m in DECL.finditer(main):
        decls.setdefault(rename.get(m.group(1), m.group(1)), m.group(2))
    for m in DECL.finditer(old):
        decls.setdefault(m.group(1), m.group(2))
    enums = set(re.findall(r"typedef\s+enum\s+\w*\s*\{[^}]*\}\s*(\w+)\s*;", text))
    return decls, enums


def param_types(params, known, enums, name):
    params = " ".join(params.split())
    if params in ("", "void"):
        return []
    out = []
    for p in params.split(","):
        p = p.strip()
        m = re.match(r"^(const\s+)?(\w+(?:\s+\w+)*?)\s*((?:\*\s*)*)(\w+)$", p)
        if not m:
            sys.exit(f"gen_driver_hooks: {name}: cannot read parameter '{p}'")
        const, base, stars = m.group(1) or "", m.group(2), m.group(3).replace(" ", "")
        base = re.sub(r"_v\d+$", "", base) if re.sub(r"_v\d+$", "", base) in known else base
        if base == "unsigned int":
            base = "unsigned"
        if base in known or base in BUILTIN or base in ("unsigned", "unsigned char", "unsigned short",
                                                         "unsigned long long"):
            out.append(f"{const}{base}{stars}")
        elif stars:
            out.append(f"{const}void{stars}")
        elif base in enums:
            out.append("unsigned")
        else:
            sys.exit(f"gen_driver_hooks: {name}: type '{base}' passed by value is not in cuda_abi.h")
    return out


def previous_types():
    """The parameter types of each row of the table as it is (for names this toolkit lacks)."""
    if not os.path.exists(TABLE):
        return {}
    with open(TABLE) as f:
        rows = re.findall(r"^  X\((\w+), \w+, \d, \w+, \w+, \(([^)]*)\)\)", f.read(), re.M)
    return {sym: [t.strip() for t in types.split(",") if t.strip()] for sym, types in rows}


def make(cuda):
    decls, enums = declarations(cuda)
    if decls is None:
        return None
    known = abi_types(ABI)
    rows = []
    previous = previous_types()
    for name, pt, record, blocking in read_spec():
        if name in decls:
            types = param_types(decls[name], known, enums, name)
        elif name in previous:  # an older toolkit than the table's: the row as it was generated
            types = previous[name]
        else:
            sys.exit(f"gen_driver_hooks: {name} is not declared in {cuda}/include/cuda.h (nor cudaProfiler.h)")
        api = name if record != "None" else "None"  # not recorded: no Api id of its own
        rows.append((name, api, 0, record, blocking, types))
        if pt != "-":
            rows.append((name + pt, api, 1, record, blocking, types))
    width = max(len(r[0]) for r in rows)
    lines = [
        "// Generated by preload/tools/gen_driver_hooks.py from preload/src/interpose/driver_hooks.txt and",
        "// the toolkit's cuda.h: edit those, then run `gen_driver_hooks.py write` (preload_driver_hooks",
        "// fails while this file is stale).",
        "//",
        "// AW_DRIVER_HOOK_ROWS(X): X(symbol, api, per_thread, record, blocking, (parameter types)): the",
        "// exported entry point, the Api id it records, whether it is a per-thread-default-stream form,",
        "// the record its wrapper writes (None: none), whether the host waits by contract (Sync/Async).",
        "// AW_PARAMS_<symbol>(names...): its parameter list with the names a wrapper gives them.",
        "#define AW_DRIVER_HOOK_ROWS(X) \\",
    ]
    for sym, api, per_thread, record, blocking, types in rows:
        lines.append(f"  X({sym}, {api}, {per_thread}, {record}, {blocking.capitalize()}, ({', '.join(types)})) \\")
    lines[-1] = lines[-1][:-2]
    lines.append("")
    for sym, _, _, _, _, types in rows:
        names = [f"a{i}" for i in range(len(types))]
        decl = ", ".join(f"{t} {n}" for t, n in zip(types, names))
        lines.append(f"#define AW_PARAMS_{sym}({', '.join(names)}) ({decl})")
    table = "\n".join(lines) + "\n"
    with open(EXPORTS) as f:
        current = f.read()
    exports = splice_exports(current, "    /* driver hooks: generated by preload/tools/gen_driver_hooks.py */\n",
                             "    /* end of driver hooks */\n", [r[0] for r in rows])
    if exports is None:
        sys.exit(f"gen_driver_hooks: {EXPORTS} lacks the generated block's markers")
    return {TABLE: table, EXPORTS: exports}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["write", "check"])
    ap.add_argument("--cuda", default=os.environ.get("CUDA_HOME", "/usr/local/cuda"))
    a = ap.parse_args()
    files = make(a.cuda)
    if files is None:
        print(f"gen_driver_hooks: no cuda.h under {a.cuda}/include: skipped")
        return 77
    return update(files, a.mode, "gen_driver_hooks")


if __name__ == "__main__":
    sys.exit(main())
