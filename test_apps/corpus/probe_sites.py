#!/usr/bin/env python3
"""Synthetic traces for checking call-site selection offline: the call instructions of a CUDA
program that launch kernels, copy or set memory (found with binutils' objdump), each made into
one traced call whose stack holds that instruction's real return address, under the frames the
runtime, nvcc's launch stub and kernel wrapper, or a library function would put beneath it.

  probe_sites.py --tool asyncwatch_probe_trace --out DIR [--lib-dir DIR]... [--via NAME]... BINARY...

For each BINARY, DIR/<name>.spec (the calls, see analyzer/tests/probe_trace.cpp) and
DIR/<name>.awtrace. `asyncwatch report --format json DIR/<name>.awtrace` then says where each call
is reported; test_apps/corpus/check_corpus.py (probe mode) and the apps.static_sites tests compare
that with the expected lines. Needed because the simulator cannot run static-runtime builds: the
stacks of a static build differ (the runtime's own functions sit in the executable).

What is probed, in functions of the program's own code (not nvcc's stubs and wrappers, not the
static runtime, not the runtime headers' inline functions):
  - calls of nvcc's launch stubs and kernel wrappers (kernel<<<...>>>), at -O0 and -O2 (also a
    stub inlined into its kernel's host wrapper, as clang makes template kernels' stubs);
  - calls of runtime/driver API functions that launch (cudaLaunchKernel, cudaGraphLaunch, ...),
    copy asynchronously (cudaMemcpy*Async) or set memory (cudaMemset*): through the PLT (shared
    runtime) or directly (static runtime, and cuda_runtime.h's template wrappers);
  - calls of the library functions named by --via (cublasSgemm_v2, ...), found through the PLT in
    the libraries the program needs (--lib-dir and the CUDA toolkit's lib64 are searched).
Synchronous copies are not probed (they are never findings). A tail call (jmp) leaves no frame of
its caller and cannot be probed. Python 3 standard library and binutils (objdump, nm, c++filt).
"""
import argparse
import os
import re
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TRACE_FORMAT = os.path.join(ROOT, "format", "include", "asyncwatch", "trace_format.h")
API_TABLE = os.path.join(ROOT, "analyzer", "src", "symbols", "cuda_api_names.inc")
FAKE_DRIVER = ("/nonexistent/probe/libcuda.so.1", 0x7f0000000000)
FAKE_RUNTIME = ("/nonexistent/probe/libcudart.so.13", 0x7f1000000000)
FAKE_SIZE = 0x1000000
LIB_BASE = 0x7e0000000000

COPY_APIS = {  # asynchronous copies: runtime name -> (direction, driver entry point it reaches)
    "cudaMemcpyAsync": "cuMemcpyHtoDAsync_v2", "cudaMemcpy2DAsync": "cuMemcpy2DAsync_v2",
    "cudaMemcpy3DAsync": "cuMemcpy3DAsync_v2", "cudaMemcpyPeerAsync": "cuMemcpyPeerAsync",
    "cudaMemcpyToSymbolAsync": "cuMemcpyHtoDAsync_v2", "cudaMemcpyFromSymbolAsync": "cuMemcpyDtoHAsync_v2",
    # the H200's runtime (measured on an H200 with sim/probe) and the simulated one
    "cudaMemcpy2DToArrayAsync": "cuMemcpy3DAsync_v2", "cudaMemcpy2DFromArrayAsync": "cuMemcpy3DAsync_v2",
    "cudaMemcpyToArrayAsync": "cuMemcpyHtoAAsync_v2", "cudaMemcpyFromArrayAsync": "cuMemcpyAtoHAsync_v2",
    "cuMemcpyAsync": "cuMemcpyAsync", "cuMemcpyHtoDAsync_v2": "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2": "cuMemcpyDtoHAsync_v2", "cuMemcpy2DAsync_v2": "cuMemcpy2DAsync_v2",
    "cuMemcpy3DAsync_v2": "cuMemcpy3DAsync_v2",
}
MEMSET_APIS = {
    "cudaMemset": "cuMemsetD8_v2", "cudaMemsetAsync": "cuMemsetD8Async", "cudaMemset2D": "cuMemsetD2D8_v2",
    "cudaMemset2DAsync": "cuMemsetD2D8Async", "cudaMemset3D": "cuMemsetD2D8_v2", "cudaMemset3DAsync": "cuMemsetD2D8Async",
    "cuMemsetD8Async": "cuMemsetD8Async", "cuMemsetD32Async": "cuMemsetD32Async", "cuMemsetD8_v2": "cuMemsetD8_v2",
    "cuMemsetD32_v2": "cuMemsetD32_v2",
}
LAUNCH_APIS = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cudaLaunchCooperativeKernel", "cudaGraphLaunch",
               "__cudaLaunchKernel", "cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel",
               "cuGraphLaunch"}
CALL = re.compile(r"^\s*([0-9a-f]+):\s+((?:[0-9a-f]{2} )+)\s*(.*)$")
FUNC = re.compile(r"^([0-9a-f]+) <(.+)>:$")
TARGET = re.compile(r"\bcall\s+([0-9a-f]+) <([^>]+)>")
SKIP_FUNCS = {"_init", "_start", "_fini", "frame_dummy", "register_tm_clones", "deregister_tm_clones",
              "__do_global_dtors_aux", "__libc_csu_init", "__libc_csu_fini", "atexit"}


def api_names():
    with open(TRACE_FORMAT) as f:
        return set(re.findall(r"^\s*X\((\w+)\)", f.read(), re.M))


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if p.returncode != 0:
        raise SystemExit(f"probe_sites: {' '.join(cmd)} failed: {p.stderr.strip()[:500]}")
    return p.stdout


def demangle_all(names):
    names = sorted(set(names))
    if not names:
        return {}
    p = subprocess.run(["c++filt"], input="\n".join(names) + "\n", stdout=subprocess.PIPE, universal_newlines=True)
    out = p.stdout.split("\n")
    return {n: (out[i] if i < len(out) else n) for i, n in enumerate(names)}


def elf_layout(path):
    """(is_pie, low, high) of the PT_LOAD segments (ELF64 little-endian)."""
    with open(path, "rb") as f:
        ident = f.read(64)
        if ident[:4] != b"\x7fELF" or ident[4] != 2:
            raise SystemExit(f"probe_sites: {path}: not a 64-bit ELF file")
        e_type = struct.unpack_from("<H", ident, 16)[0]
        phoff = struct.unpack_from("<Q", ident, 32)[0]
        phentsize, phnum = struct.unpack_from("<HH", ident, 54)
        f.seek(phoff)
        ph = f.read(phentsize * phnum)
    low, high = None, 0
    for i in range(phnum):
        p_type, _, _, vaddr, _, _, memsz, _ = struct.unpack_from("<IIQQQQQQ", ph, i * phentsize)
        if p_type == 1:
            low = vaddr if low is None else min(low, vaddr)
            high = max(high, vaddr + memsz)
    return e_type == 3, low or 0, high


def needed_and_runpath(path):
    needed, runpath = [], []
    for line in run(["objdump", "-p", path]).splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "NEEDED":
            needed.append(parts[1])
        elif len(parts) >= 2 and parts[0] in ("RUNPATH", "RPATH"):
            origin = os.path.dirname(os.path.abspath(path))
            runpath += [d.replace("$ORIGIN", origin) for d in parts[1].split(":")]
    return needed, runpath


def sized_symbols(path, dynamic):
    """[(value, size, nm type, name)] of the defined symbols that have a size."""
    cmd = ["nm", "--defined-only", "-S"] + (["-D"] if dynamic else []) + [path]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    rows = [line.split() for line in p.stdout.splitlines()]
    return [(int(r[0], 16), int(r[1], 16), r[2], r[3]) for r in rows if len(r) == 4]


def functions(rows):
    """name -> (value, size) of the functions among sized_symbols' rows."""
    out = {}
    for value, size, kind, name in rows:
        if kind in "TtWi":
            out.setdefault(name.split("@")[0], (value, size))
    return out


def symbols(path, dynamic):
    """name -> (value, size) of the defined functions."""
    return functions(sized_symbols(path, dynamic))


def disassemble(path):
    """[(function, [(addr, ret, target_addr, target_name)])] for every function."""
    funcs, cur = [], None
    text = run(["objdump", "-d", "-w", "--insn-width=16", path])
    for line in text.splitlines():
        m = FUNC.match(line)
        if m:
            cur = (m.group(2), [])
            funcs.append(cur)
            continue
        if cur is None:
            continue
        m = CALL.match(line)
        if not m:
            continue
        addr = int(m.group(1), 16)
        ret = addr + len(m.group(2).split())
        t = TARGET.search(m.group(3))
        if t:
            cur[1].append((addr, ret, int(t.group(1), 16), t.group(2)))
    return funcs


def plain(demangled):
    """qualified name without arguments or template arguments: cudaLaunchKernel<char>(...) -> cudaLaunchKernel"""
    s, depth, out = demangled, 0, ""
    for ch in s:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            break
        elif depth == 0:
            out += ch
    out = out.strip()
    return out.split(" ")[-1]


def cuda_api_table():
    """The analyzer's table of CUDA runtime and driver API names (one definition)."""
    with open(API_TABLE) as f:
        return set(re.findall(r'^"([^"]+)",$', f.read(), re.M))


CUDA_API = None


def is_runtime_function(d):
    """The runtime's own functions, by exact API name or static-runtime symbol (never by a prefix)."""
    global CUDA_API
    if CUDA_API is None:
        CUDA_API = cuda_api_table()
    p = re.sub(r"_(ptsz|ptds)$", "", plain(d))
    return p.startswith(("libcudart_static_", "cudart::", "__cudart")) or p in CUDA_API


def is_driver(name):
    return name.startswith("cu") and not name.startswith("cuda")


def stub_kernel(mangled, dem):
    """The kernel (mangled, as the driver names it) whose stub `mangled` is, or None."""
    d = dem.get(mangled, mangled)
    if "__device_stub_" not in d.split("(")[0]:
        return None
    rest = d.split("(")[0].split("__device_stub_", 1)[1]
    return rest if rest.startswith("_Z") else rest[1:] if rest.startswith("_") else rest


def stub_locals_kernels(rows):
    """The kernels (mangled) named by nvcc's stubs' static locals (_ZZ[L]<n>__device_stub__<kernel>...),
    among sized_symbols' rows: the length-prefixed name is the stub's."""
    out = set()
    for _, _, kind, name in rows:
        m = re.match(r"_ZZL?(\d+)(__device_stub_\w*)", name) if kind in "bBdD" else None
        if m and len(m.group(2)) >= int(m.group(1)):
            out.add(stub_kernel(m.group(2)[:int(m.group(1))], {}))
    return sorted(out)


def probe(binary, opts, apis):
    pie, low, high = elf_layout(binary)
    bias = 0x555555554000 if pie else 0
    funcs = disassemble(binary)
    rows = sized_symbols(binary, False)
    syms = functions(rows) or symbols(binary, True)
    names = [f for f, _ in funcs] + [c[3] for _, calls in funcs for c in calls]
    dem = demangle_all([n.split("@")[0].split("+")[0] for n in names])
    body = {f: calls for f, calls in funcs}
    addr_of = {f: syms[f][0] for f in syms}
    is_static = any(n.startswith("libcudart_static_") or n == "__cudaLaunchKernel" for n in syms)

    stubs = {}  # stub symbol -> kernel
    for f in body:
        k = stub_kernel(f, dem)
        if k:
            stubs[f] = k

    def d(n):
        return dem.get(n.split("@")[0].split("+")[0], n)

    # A stub inlined into its kernel's host wrapper (clang as nvcc's host compiler does it for
    # template kernels): the wrapper pops the launch configuration itself and is the stub. Its
    # kernel's name is in the stub's static locals, which keep the stub's name (_ZZ[L]<n>__device_stub_...).
    inlined = {}  # demangled kernel -> mangled kernel
    local_kernels = stub_locals_kernels(rows)
    local_dem = demangle_all(local_kernels)
    for k in local_kernels:
        inlined.setdefault(local_dem.get(k, k), k)
    for f, calls in body.items():
        if f not in stubs and d(f) in inlined and any(
                t.split("@")[0] == "__cudaPopCallConfiguration" for _, _, _, t in calls):
            stubs[f] = inlined[d(f)]

    # the kernels' host wrappers, by demangled name (the wrapper of a kernel in an anonymous
    # namespace has internal linkage: its mangled name differs from the kernel's by an "L")
    kernel_names = set(demangle_all(list(stubs.values())).values())
    kernels = {f for f in body if d(f) in kernel_names and f not in stubs}

    def inside(name):  # an address inside a function of the binary, as a return address
        v, size = syms.get(name, (None, 0))
        if v is None:
            return None
        return bias + v + min(max(size - 1, 0), 8) + 1

    internal = next((n for n in syms if n.startswith("libcudart_static_")), None)

    def runtime_frames(api_symbol):
        """Frames beneath a call of an API function: driver, then (static) the runtime's own."""
        frames = [FAKE_DRIVER[1] + 0x1000]
        if api_symbol in syms:  # the static runtime (or cuda_runtime.h's inline wrapper) in the program
            if internal:
                frames.append(inside(internal))
            frames.append(inside(api_symbol))
        else:
            frames.append(FAKE_RUNTIME[1] + 0x2000)
        return frames

    # Launch helpers: a stub, nvcc's __wrapper__device_stub_ (templates) and the kernel wrapper,
    # each calling the next; chain(f) = the frames beneath a call of f.
    def chain(f, depth=0):
        if f in stubs:
            launch_api = "__cudaLaunchKernel"
            inner = runtime_frames(launch_api) if launch_api in syms else [FAKE_DRIVER[1] + 0x1000,
                                                                             FAKE_RUNTIME[1] + 0x3000]
            return inner + [inside(f)], stubs[f]
        if depth > 4 or f not in body:
            return None
        for _, ret, _, t in body[f]:
            t0 = t.split("@")[0]
            if t0 in stubs or is_helper(t0):
                c = chain(t0, depth + 1)
                if c:
                    return c[0] + [bias + ret], c[1]
        return None

    def is_helper(f):
        return f in stubs or f in kernels or "__wrapper__device_stub_" in d(f)

    libs = []
    if opts.via:
        needed, runpath = needed_and_runpath(binary)
        dirs = runpath + opts.lib_dir + ["/usr/local/cuda/lib64"]
        for i, so in enumerate(needed):
            for dd in dirs:
                path = os.path.join(dd, so)
                if os.path.exists(path):
                    _, llow, lhigh = elf_layout(path)
                    base = LIB_BASE + i * 0x100000000
                    libs.append((path, base, llow, lhigh, symbols(path, True)))
                    break

    spec = [f"exe {binary}",
            f"module {binary} {bias + low:x} {bias + high:x} {bias:x}",
            f"module {FAKE_DRIVER[0]} {FAKE_DRIVER[1]:x} {FAKE_DRIVER[1] + FAKE_SIZE:x} {FAKE_DRIVER[1]:x}",
            f"module {FAKE_RUNTIME[0]} {FAKE_RUNTIME[1]:x} {FAKE_RUNTIME[1] + FAKE_SIZE:x} {FAKE_RUNTIME[1]:x}"]
    for path, base, llow, lhigh, _ in libs:
        spec.append(f"module {path} {base + llow:x} {base + lhigh:x} {base:x}")
    probed = []
    for f, calls in funcs:
        df = d(f)
        if (f in SKIP_FUNCS or f.endswith("@plt") or is_helper(f) or is_runtime_function(df) or
                f.startswith(("_GLOBAL__sub_I", "__sti__", "__cudaUnregister"))):
            continue
        for addr, ret, _, target in calls:
            t0 = target.split("@")[0]
            if "+" in t0:
                continue
            name = plain(d(t0))
            stack = kind = None
            if is_helper(t0):
                c = chain(t0)
                if c:
                    stack, kernel = c
                    kind = f"launch {'cuLaunchKernel' if is_static else '__cudaLaunchKernel'} {kernel}"
            elif name in LAUNCH_APIS:
                api = "cuLaunchKernel" if is_static or is_driver(name) else name
                if api not in apis:
                    api = "cuLaunchKernel"
                stack, kind = runtime_frames(t0), f"launch {api} probe_kernel_{name}"
            elif name in COPY_APIS:
                drv = COPY_APIS[name]
                api = drv if is_static or is_driver(name) or name not in apis else name
                stack, kind = runtime_frames(t0), f"copy {api} {drv} HtoD pageable device"
            elif name in MEMSET_APIS:
                drv = MEMSET_APIS[name]
                api = drv if is_static or is_driver(name) or name not in apis else name
                stack, kind = runtime_frames(t0), f"memset {api} {drv}"
            elif opts.via and target.endswith("@plt") and t0 in opts.via:
                for path, base, _, _, lsyms in libs:
                    if t0 in lsyms:
                        v, size = lsyms[t0]
                        stack = [FAKE_DRIVER[1] + 0x1000, base + v + min(max(size - 1, 0), 8) + 1]
                        kind = f"launch cuLaunchKernel probe_kernel_in_{t0}"
                        break
            if stack and None not in stack:
                frames = stack + [bias + ret]
                spec.append(f"{kind} " + " ".join(f"{a:x}" for a in frames))
                probed.append((addr, df, d(t0)))
    return spec, probed


def make_probe_trace(binary, out_dir, tool, lib_dirs=(), via=(), verbose=False):
    """Writes out_dir/<name>.spec and out_dir/<name>.awtrace for `binary`; returns the trace path."""
    class Opts:
        pass
    o = Opts()
    o.lib_dir, o.via = list(lib_dirs), list(via)
    spec, probed = probe(binary, o, api_names())
    os.makedirs(out_dir, exist_ok=True)
    name = os.path.basename(binary)
    spec_path = os.path.join(out_dir, name + ".spec")
    with open(spec_path, "w") as f:
        f.write("\n".join(spec) + "\n")
    trace = os.path.join(out_dir, name + ".awtrace")
    p = subprocess.run([tool, spec_path, trace], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if p.returncode != 0:
        raise SystemExit(f"probe_sites: {tool} failed: {p.stderr.strip()}")
    if verbose:
        print(f"probe_sites: {binary}: {len(probed)} calls probed")
        for addr, caller, callee in probed:
            print(f"  {addr:#x} in {caller[:80]} -> {callee[:80]}")
    return trace


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binaries", nargs="+")
    ap.add_argument("--tool", required=True, help="asyncwatch_probe_trace (built with the analyzer's tests)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--lib-dir", action="append", default=[])
    ap.add_argument("--via", action="append", default=[], help="library functions whose calls are probed")
    ap.add_argument("-v", "--verbose", action="store_true")
    opts = ap.parse_args()
    for b in opts.binaries:
        make_probe_trace(b, opts.out, opts.tool, opts.lib_dir, opts.via, verbose=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
