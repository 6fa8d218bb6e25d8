#!/usr/bin/env python3
"""The CUDA runtime and driver API names that asyncwatch recognizes as CUDA's own frames
(analyzer/src/symbols/cuda_api_names.inc), taken from a CUDA toolkit.

  gen_cuda_api_names.py write [--cuda DIR] [--keep]   regenerate the table (DIR: /usr/local/cuda)
  gen_cuda_api_names.py check [--cuda DIR]            the table holds every name of this toolkit
                                                      (exit 0; 1 listing the missing ones; 77 when
                                                      DIR has no headers: the test is skipped)

Sources, all in the toolkit's include/ directory (no library is needed):
- function declarations `cuda[A-Z]...(` / `cu[A-Z]...(` in cuda_runtime_api.h, cuda_runtime.h
  (its C++ template wrappers), cuda.h and the interop headers, and the names their `#define`s map
  versioned entry points to (`#define cuMemcpyHtoDAsync __CUDA_API_PTSZ(cuMemcpyHtoDAsync_v2)`);
- the internal entry points nvcc's generated code calls, `__cuda[A-Z]...(` in crt/host_runtime.h
  and crt/device_functions.h (`__cudaLaunchKernel`, `__cudaPushCallConfiguration`, ...);
- CUPTI's callback id tables (cupti_runtime_cbid.h, cupti_driver_cbid.h), which keep the names of
  every runtime and driver function since CUDA 3, including ones later toolkits removed
  (`cudaThreadSynchronize`), so that programs built with an older toolkit are covered too.
The per-thread-stream forms (`_ptsz`, `_ptds`) are not listed: the analyzer strips those suffixes
before looking a name up. `write --keep` keeps names already in the table that this toolkit lacks
(the table is the union over the toolkits it was generated from). Python 3 standard library only.
"""
import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TABLE = os.path.join(HERE, "..", "src", "symbols", "cuda_api_names.inc")

HEADERS = [
    "cuda_runtime_api.h", "cuda_runtime.h", "cuda.h", "cudaGL.h", "cudaEGL.h", "cudaVDPAU.h",
    "cudaProfiler.h", "cuda_gl_interop.h", "cuda_egl_interop.h", "cuda_vdpau_interop.h",
    "cuda_profiler_api.h", "crt/host_runtime.h", "crt/device_functions.h",
]
CBID_HEADERS = ["cupti_runtime_cbid.h", "cupti_driver_cbid.h"]

NAME = r"(?:__cuda|cuda|cu)[A-Z]\w*"
DECL = re.compile(r"\b(" + NAME + r")\s*\(")
DEFINE = re.compile(r"#\s*define\s+(" + NAME + r")\s+(?:__CUDA_API_PT[DS][SZ]\s*\(\s*)?(" + NAME + r")\b")
CBID = re.compile(r"\bCUPTI_(RUNTIME|DRIVER)_TRACE_CBID_(" + NAME + r")\b")
SUFFIX = re.compile(r"_(ptsz|ptds)$")


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def toolkit_names(cuda):
    inc = os.path.join(cuda, "include")
    found = set()
    seen_header = False
    for h in HEADERS:
        path = os.path.join(inc, h)
        if not os.path.exists(path):
            continue
        seen_header = True
        with open(path, encoding="utf-8", errors="replace") as f:
            text = strip_comments(f.read())
        for m in DECL.finditer(text):
            # crt headers: only the internal entry points (their other calls are device code)
            if h.startswith("crt/") and not m.group(1).startswith("__cuda"):
                continue
            found.add(m.group(1))
        for m in DEFINE.finditer(text):
            found.update((m.group(1), m.group(2)))
    for h in CBID_HEADERS:
        path = os.path.join(inc, h)
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            for m in CBID.finditer(f.read()):
                name = m.group(2)
                if m.group(1) == "RUNTIME":  # runtime ids end in the version that added them: _v3020
                    name = re.sub(r"_v\d{4,6}$", "", name)
                found.add(name)
    if not seen_header:
        return None
    names = set()
    for n in found:
        n = SUFFIX.sub("", n)
        # Macros of the headers, not functions: CUDA_VERSION-style guards never match NAME; the
        # runtime's own helper macros do (cudaCheck...): keep only what has a lower-case tail.
        if n.upper() == n:
            continue
        names.add(n)
    return names


def read_table():
    names = set()
    if os.path.exists(TABLE):
        with open(TABLE) as f:
            for line in f:
                m = re.match(r'\s*"([^"]+)",', line)
                if m:
                    names.add(m.group(1))
    return names


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["write", "check"])
    ap.add_argument("--cuda", default=os.environ.get("CUDA_HOME", "/usr/local/cuda"))
    ap.add_argument("--keep", action="store_true")
    opts = ap.parse_args()
    names = toolkit_names(opts.cuda)
    if names is None:
        print(f"gen_cuda_api_names: no CUDA headers in {opts.cuda}/include: nothing to compare", file=sys.stderr)
        return 77 if opts.command == "check" else 2
    if opts.command == "check":
        table = read_table()
        missing = sorted(names - table)
        if missing:
            print(f"{len(missing)} names of the toolkit in {opts.cuda} are not in {os.path.relpath(TABLE)}; "
                  f"regenerate it with `{os.path.relpath(__file__)} write --keep`:")
            for n in missing:
                print("  " + n)
            return 1
        print(f"all {len(names)} runtime and driver API names of {opts.cuda} are in the table ({len(table)} names)")
        return 0
    if opts.keep:
        names |= read_table()
    version = "unknown"
    vfile = os.path.join(opts.cuda, "include", "cuda.h")
    with open(vfile, encoding="utf-8", errors="replace") as f:
        m = re.search(r"#define\s+CUDA_VERSION\s+(\d+)", f.read())
        if m:
            v = int(m.group(1))
            version = f"{v // 1000}.{v % 1000 // 10}"
    with open(TABLE, "w") as f:
        f.write("// Generated by analyzer/tools/gen_cuda_api_names.py from the headers of CUDA "
                f"{version}{' (and earlier tables)' if opts.keep else ''}; do not edit.\n")
        f.write("// Every CUDA runtime and driver API function name (without _ptsz/_ptds), sorted.\n")
        for n in sorted(names):
            f.write(f'"{n}",\n')
    print(f"wrote {len(names)} names to {os.path.relpath(TABLE)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
