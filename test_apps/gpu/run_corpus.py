#!/usr/bin/env python3
"""Runs the call-site corpus (public CUDA programs built outside this repository, see
test_apps/corpus/README.md) on the GPU machine: every binary of the archive, bare and under
LD_PRELOAD=libasyncwatch.so with ASYNCWATCH_STACKS=all, and packs traces and program output into
$OUT/corpus-results.tar.gz (plus $OUT/summary.txt). It only runs binaries; it builds nothing.

  python3 test_apps/gpu/run_corpus.py [--archive .corpus/corpus.tar.xz] [--preload LIB] [--out DIR]
  python3 test_apps/gpu/run_corpus.py --python [--archive .corpus/pycorpus.tar.xz] [--asyncwatch BIN]
                                      [--preload LIB] [--interpreter PY] [--out DIR]

(`validate_on_gpu.sh corpus` runs the first with the staged build's library, `validate_on_gpu.sh
pycorpus` the second.) --python runs the public Python programs of build_corpus.py --python: each
under `asyncwatch run` (ASYNCWATCH_STACKS=all), then bare, in the program's directory (through
test_apps/corpus/pyshim.py where its expectation names a shim), makes its reports here
(report.{default,all,nosym}.json: default thresholds, every call flagged, no module symbols), judges
them with check_corpus.py (where the asyncwatch command cannot run here: traced with
LD_PRELOAD=--preload, no reports, every trace packed, judged back home with `check_corpus.py
pyresults --build BUILD`) and packs $OUT/pycorpus-results.tar.gz (reports, output, the traces of the
programs whose traces are small) and $OUT/pysummary.txt (the table). A program whose modules
("needs") the interpreter cannot import is SKIP, not run. About 4-6 minutes on an H100 (nanoGPT's
torch.compile most of it); new runs stop after --budget-s.

Back on the development machine, from the repository root (DIR: an empty directory):
tar xzf corpus-results.tar.gz -C DIR && python3 test_apps/corpus/check_corpus.py results
--results DIR/corpus-results --bin-dir BIN_DIR --build build
Python 3 standard library only; finishes within --budget-s (480 s) plus one run's timeout.
"""
import argparse
import glob
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EXPECTED = os.path.join(ROOT, "test_apps", "corpus", "expected")
VARIANTS = ["O0.static", "O0.shared", "O2.static", "O2.shared"]
LIBS = ["libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13", "libcusparse.so.12", "libcufft.so.12"]
LIB_DIR_GLOBS = ["/usr/local/cuda/lib64", "/usr/local/cuda/targets/*-linux/lib", "/usr/local/cuda-*/lib64",
                 "/usr/local/cuda-*/targets/*-linux/lib", "/opt/*/.venv/lib/python3*/site-packages/nvidia/*/lib",
                 "/usr/local/lib/python3*/dist-packages/nvidia/*/lib", "/usr/lib/python3/dist-packages/nvidia/*/lib"]


def write_info(results, info, gpu_fields):
    """The run's info.txt (and the same lines printed): `info` and the GPU's `gpu_fields` from nvidia-smi."""
    try:
        info.append("gpu=" + subprocess.run(["nvidia-smi", f"--query-gpu={gpu_fields}", "--format=csv,noheader"],
                                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30,
                                            universal_newlines=True).stdout.strip().replace("\n", " / "))
    except Exception as e:  # noqa: BLE001
        info.append(f"gpu=? ({e})")
    with open(os.path.join(results, "info.txt"), "w") as f:
        f.write("\n".join(info) + "\n")
    print("\n".join(info), flush=True)


def library_dirs():
    """Directories to add to LD_LIBRARY_PATH for the CUDA libraries the corpus needs."""
    known = subprocess.run(["ldconfig", "-p"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           universal_newlines=True).stdout
    dirs, notes = [], []
    for lib in LIBS:
        if f"{lib} " in known:
            notes.append(f"{lib}: found by the loader")
            continue
        hit = None
        for pattern in LIB_DIR_GLOBS:
            for d in sorted(glob.glob(pattern)):
                if os.path.exists(os.path.join(d, lib)):
                    hit = d
                    break
            if hit:
                break
        notes.append(f"{lib}: {hit or 'NOT FOUND'}")
        if hit and hit not in dirs:
            dirs.append(hit)
    return dirs, notes


def run(cmd, cwd, env, timeout, prefix):
    t0 = time.monotonic()
    with open(prefix + "stdout", "wb") as out, open(prefix + "stderr", "wb") as err:
        try:
            # A session of its own: a timeout ends the program's children too (`asyncwatch run`'s program).
            p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=err, start_new_session=True)
            try:
                rc = p.wait(timeout=timeout)
                rc = 128 - rc if rc < 0 else rc  # killed by signal N: 128 + N, as `asyncwatch run` says it
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                rc = 124
        except OSError as e:
            err.write(f"[run_corpus] cannot run {cmd[0]}: {e}\n".encode())
            rc = 127
    with open(prefix + "rc", "w") as f:
        f.write(f"{rc}\n")
    return rc, time.monotonic() - t0


def python_interpreter(given):
    for p in ([given] if given else []) + [os.environ.get("PYTHON"), "/opt/torch/.venv/bin/python3", sys.executable]:
        if p and os.path.exists(p):
            return p
    return sys.executable


def dir_bytes(d):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)


def main_python(opts):
    """The Python corpus: run, report, judge and pack (see the module's docstring)."""
    sys.path.insert(0, os.path.join(ROOT, "test_apps", "corpus"))
    import check_corpus  # noqa: E402
    start = time.monotonic()
    archive = opts.archive or os.path.join(ROOT, ".corpus", "pycorpus.tar.xz")
    aw = opts.asyncwatch or next((p for p in (os.path.join(ROOT, "build-gpu", "bin", "asyncwatch"),
                                              os.path.join(ROOT, "build", "bin", "asyncwatch")) if os.path.exists(p)), None)
    aw = aw and os.path.abspath(aw)  # the programs run in their own directories
    preload = opts.preload or (aw and os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(aw))), "lib",
                                                   "libasyncwatch.so"))
    try:  # the analyzer runs here only if its shared libraries do (test_apps/gpu/stage_build.sh)
        aw_ok = bool(aw) and subprocess.run([aw, "--version"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                            timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        aw_ok = False
    if not aw_ok and not (preload and os.path.exists(preload)):
        print("run_corpus: neither a working asyncwatch command nor libasyncwatch.so (give --asyncwatch or --preload)",
              file=sys.stderr)
        return 2
    if not os.path.exists(archive):
        print(f"run_corpus: no archive {archive} (test_apps/corpus/build_corpus.py --python makes it)", file=sys.stderr)
        return 2
    py = python_interpreter(opts.interpreter)
    py = os.path.abspath(py) if os.sep in py else py
    shim = os.path.join(ROOT, "test_apps", "corpus", "pyshim.py")
    out_dir = os.path.abspath(opts.out)
    os.makedirs(out_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="aw-pycorpus-")
    results = os.path.join(work, "pycorpus-results")
    os.makedirs(os.path.join(results, "runs"))
    with tarfile.open(archive) as t:
        if hasattr(tarfile, "data_filter"):
            t.extractall(work, filter="data")
        else:
            t.extractall(work)
    src = os.path.join(work, "pycorpus")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASYNCWATCH_") and k != "LD_PRELOAD"}
    env["PYTHONUNBUFFERED"] = "1"
    try:
        versions = subprocess.run([py, "-c", "import sys, importlib\nprint('python', sys.version.split()[0])\n"
                                   "for m in ('torch', 'triton', 'cupy', 'jax', 'jaxlib', 'numpy', 'torchvision'):\n"
                                   "    try: print(m, importlib.import_module(m).__version__)\n"
                                   "    except Exception as e: print(m, 'not importable:', type(e).__name__)"],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, env=env,
                                  timeout=180).stdout.strip().splitlines()
    except (OSError, subprocess.TimeoutExpired) as e:
        versions = [f"python ? ({e})"]
    importable = {l.split()[0] for l in versions if "not importable" not in l}
    info = [f"date={time.strftime('%Y-%m-%d %H:%M:%S %Z')}", f"host={platform.node()} {platform.platform()}",
            f"interpreter={py}", f"asyncwatch={os.path.abspath(aw) if aw_ok else 'not usable here: ' + str(aw)}",
            f"traced with={'asyncwatch run' if aw_ok else 'LD_PRELOAD=' + os.path.abspath(preload)}",
            f"archive={os.path.abspath(archive)}"]
    info += [f"module: {l}" for l in versions]
    write_info(results, info, "name,driver_version")

    exps = check_corpus.load(opts.programs.split(",") if opts.programs else [], "python")
    order = ["cupy_event", "cupy_memcpy", "cupy_map_reduce", "pt_mnist", "triton_vector_add", "jax_mnist", "nanogpt_bench"]
    exps.sort(key=lambda e: order.index(e["program"]) if e["program"] in order else -1)
    # Traces are packed while the archive stays small; all of them where no report is made here.
    rows, trace_budget = [], (opts.trace_budget_mb or (10 if aw_ok else 15)) * 2**20
    for e in exps:
        d = os.path.join(results, "runs", e["program"])
        traces = os.path.join(d, "traces")
        os.makedirs(traces)
        missing = [m for m in e["needs"] if m not in importable]
        if missing or time.monotonic() - start > opts.budget_s:
            why = (f"{', '.join(missing)} not importable by {py}" if missing else "the time budget was spent")
            with open(os.path.join(d, "skipped"), "w") as f:
                f.write(why + "\n")
            rows.append(f"{e['program']:20} SKIPPED ({why})")
            print(rows[-1], flush=True)
            continue
        cwd = os.path.join(src, e["program"])
        cmd = [py] + ([shim, e["shim"]] if e.get("shim") else []) + [e["script"]] + e["args"]
        penv = dict(env, **e.get("env", {}))
        # Nothing runs past --budget-s + 120 s: the archive is written before the caller's limit.
        left = lambda: max(5.0, opts.budget_s + 120 - (time.monotonic() - start))  # noqa: E731
        if aw_ok:
            traced = [aw, "run", "-o", traces, "--report-output", os.path.join(d, "report.txt"), "--"] + cmd
            tenv = dict(penv, ASYNCWATCH_STACKS="all")
        else:
            traced = cmd
            tenv = dict(penv, ASYNCWATCH_STACKS="all", LD_PRELOAD=os.path.abspath(preload), ASYNCWATCH_OUTPUT_DIR=traces)
        rc, secs = run(traced, cwd, tenv, min(e.get("timeout_s", 120), left()), d + os.sep)
        rc0, secs0 = run(cmd, cwd, penv, min(e.get("timeout_s", 120), left()), os.path.join(d, "bare."))
        t0 = time.monotonic()
        for name, extra, renv in (("default", [], env), ("all", check_corpus.ALL_SITES, env),
                                  ("nosym", [], dict(env, ASYNCWATCH_NO_SYMBOLS="1"))) if aw_ok else ():
            try:
                p = subprocess.run([aw, "report", "--format", "json", "-o", os.path.join(d, f"report.{name}.json")]
                                   + extra + [traces], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   universal_newlines=True, env=renv, timeout=min(240, left()))
                failure = f"exit {p.returncode}\n{p.stdout[-4000:]}" if p.returncode not in (0, 1) else None
            except subprocess.TimeoutExpired:
                failure = "timed out (time budget)"
            if failure:
                with open(os.path.join(d, f"report.{name}.error"), "w") as f:
                    f.write(failure)
        size = dir_bytes(traces)
        dropped = size > trace_budget
        if dropped:
            shutil.rmtree(traces)
            os.makedirs(traces)
            with open(os.path.join(d, "traces.dropped"), "w") as f:
                f.write(f"{size} bytes of traces not packed\n")
        else:
            trace_budget -= size
        if aw_ok:
            verdict, errors, _ = check_corpus.check_py_run(e, d, None)
        else:
            verdict = "RAN" if rc == rc0 == 0 else "FAIL"
            errors = [f"exit status {rc} traced, {rc0} bare; judged back home (pyresults --build)"
                                      + ("; its traces were too large to pack: no verdict possible" if dropped else "")]
        rows.append(f"{e['program']:20} {verdict:5} traced rc={rc} {secs:6.1f} s, bare rc={rc0} {secs0:6.1f} s, "
                    f"reports {time.monotonic() - t0:5.1f} s, traces {size / 2**20:.1f} MiB")
        rows += [f"    - {x}" for x in errors[:40]]
        print("\n".join(rows[-1 - len(errors[:40]):]), flush=True)
    summary = "\n".join(info + [""] + rows + [f"total {time.monotonic() - start:.0f} s"]) + "\n"
    for path in (os.path.join(results, "summary.txt"), os.path.join(out_dir, "pysummary.txt")):
        with open(path, "w") as f:
            f.write(summary)
    tar = os.path.join(out_dir, "pycorpus-results.tar.gz")
    with tarfile.open(tar, "w:gz") as t:
        t.add(results, arcname="pycorpus-results")
    shutil.rmtree(work, ignore_errors=True)
    print(f"run_corpus: {tar}, {os.path.getsize(tar) / 2**20:.1f} MiB ({time.monotonic() - start:.0f} s)")
    passed = sum(1 for r in rows if r[21:26] in ("pass ", "RAN  "))
    return 0 if passed and not any(r[21:26] == "FAIL " for r in rows) else 1  # nothing run is no pass


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--archive", help="default: .corpus/corpus.tar.xz (.corpus/pycorpus.tar.xz with --python)")
    ap.add_argument("--python", action="store_true", help="the Python programs (see above)")
    ap.add_argument("--asyncwatch", help="--python: the asyncwatch command (default: build-gpu/bin, then build/bin)")
    ap.add_argument("--interpreter", help="--python: the Python with the frameworks (default: $PYTHON, "
                                          "/opt/torch/.venv/bin/python3, this one)")
    ap.add_argument("--preload", help="libasyncwatch.so (default: build-gpu/lib, then build/lib)")
    ap.add_argument("--out", default=os.environ.get("OUT") or "corpus-out")
    ap.add_argument("--budget-s", type=float, default=480, help="start no run after this (--python: and end "
                                                                   "every run by this + 120 s)")
    ap.add_argument("--timeout-s", type=float, default=90)
    ap.add_argument("--trace-budget-mb", type=float, help="--python: MiB of traces packed in all (default 10 when "
                                                          "the reports are made here, else 15)")
    ap.add_argument("--programs", help="comma-separated (default: every expectation file)")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated builds (default: all four)")
    ap.add_argument("--sim", help="a check without a GPU: asyncwatch's simulated driver and runtime from this "
                                  "directory (shared-runtime builds only; not a GPU result)")
    opts = ap.parse_args()
    if opts.python:
        return main_python(opts)
    opts.archive = opts.archive or os.path.join(ROOT, ".corpus", "corpus.tar.xz")
    start = time.monotonic()
    preload = opts.preload or next((p for p in (os.path.join(ROOT, "build-gpu", "lib", "libasyncwatch.so"),
                                                os.path.join(ROOT, "build", "lib", "libasyncwatch.so"))
                                    if os.path.exists(p)), None)
    if not preload or not os.path.exists(preload):
        print(f"run_corpus: no libasyncwatch.so (give --preload)", file=sys.stderr)
        return 2
    if not os.path.exists(opts.archive):
        print(f"run_corpus: no archive {opts.archive}", file=sys.stderr)
        return 2
    out_dir = os.path.abspath(opts.out)
    os.makedirs(out_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="aw-corpus-")
    results = os.path.join(work, "corpus-results")
    os.makedirs(os.path.join(results, "runs"))
    with tarfile.open(opts.archive) as t:
        if hasattr(tarfile, "data_filter"):  # Python >= 3.12: plain files only, nothing outside `work`
            t.extractall(work, filter="data")
        else:
            t.extractall(work)
    bin_dir = os.path.join(work, "corpus", "bin")
    dirs, lib_notes = library_dirs()
    if opts.sim:
        dirs.insert(0, os.path.abspath(opts.sim))
        lib_notes.insert(0, f"SIMULATOR: libcuda.so.1 and libcudart.so.13 from {os.path.abspath(opts.sim)}")
    env = dict(os.environ)
    if dirs:
        env["LD_LIBRARY_PATH"] = ":".join(dirs + ([env["LD_LIBRARY_PATH"]] if env.get("LD_LIBRARY_PATH") else []))
    for k in list(env):
        if k.startswith("ASYNCWATCH_") or k == "LD_PRELOAD":
            del env[k]
    info = [f"date={time.strftime('%Y-%m-%d %H:%M:%S %Z')}", f"host={platform.node()} {platform.platform()}",
            f"bin_dir={bin_dir}", f"preload={os.path.abspath(preload)}", f"archive={os.path.abspath(opts.archive)}",
            f"LD_LIBRARY_PATH={env.get('LD_LIBRARY_PATH', '')}"] + [f"lib: {n}" for n in lib_notes]
    write_info(results, info, "name,driver_version,memory.total")

    exps = []
    for path in sorted(glob.glob(os.path.join(EXPECTED, "*.json"))):
        with open(path) as f:
            e = json.load(f)
        if e.get("language", "cuda") == "cuda" and (not opts.programs or e["program"] in opts.programs.split(",")):
            exps.append(e)
    jobs = [(e, v) for e in exps for v in opts.variants.split(",")]
    rows = []
    # The traced runs first (they are what is checked), then the bare ones while time is left.
    for phase in ("traced", "bare"):
        for e, v in jobs:
            name = f"{e['program']}.{v}"
            d = os.path.join(results, "runs", name)
            os.makedirs(os.path.join(d, "traces"), exist_ok=True)
            binary = os.path.join(bin_dir, name)
            if time.monotonic() - start > opts.budget_s:
                rows.append(f"{name:36} {phase:6} SKIPPED (time budget)")
                continue
            if not os.path.exists(binary):
                rows.append(f"{name:36} {phase:6} MISSING")
                continue
            run_env = dict(env)
            prefix = os.path.join(d, "bare." if phase == "bare" else "")
            if phase == "traced":
                run_env.update(LD_PRELOAD=os.path.abspath(preload), ASYNCWATCH_OUTPUT_DIR=os.path.join(d, "traces"),
                               ASYNCWATCH_STACKS="all", ASYNCWATCH_QUIET="1")
            rc, secs = run([binary] + e.get("args", []), d, run_env, opts.timeout_s, prefix)
            n = len(glob.glob(os.path.join(d, "traces", "*.awtrace")))
            rows.append(f"{name:36} {phase:6} rc={rc:<4} {secs:6.1f} s" + (f"  traces={n}" if phase == "traced" else ""))
            print(rows[-1], flush=True)
    summary = "\n".join(info + [""] + rows) + "\n"
    with open(os.path.join(results, "summary.txt"), "w") as f:
        f.write(summary)
    with open(os.path.join(out_dir, "summary.txt"), "w") as f:
        f.write(summary)
    with tarfile.open(os.path.join(out_dir, "corpus-results.tar.gz"), "w:gz") as t:
        t.add(results, arcname="corpus-results")
    shutil.rmtree(work, ignore_errors=True)
    size = os.path.getsize(os.path.join(out_dir, "corpus-results.tar.gz"))
    print(f"run_corpus: {out_dir}/corpus-results.tar.gz, {size / 2**20:.1f} MiB ({time.monotonic() - start:.0f} s)")
    if size > 16 * 2**20:  # what the device tool brings back per file
        print("run_corpus: the archive is over 16 MiB: run again with --programs in two halves", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
