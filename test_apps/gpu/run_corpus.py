#!/usr/bin/env python3
"""Runs the call-site corpus (public CUDA programs built outside this repository, see
test_apps/corpus/README.md) on the GPU machine: every binary of the archive, bare and under
LD_PRELOAD=libasyncwatch.so with ASYNCWATCH_STACKS=all, and packs traces and program output into
$OUT/corpus-results.tar.gz (plus $OUT/summary.txt). It only runs binaries; it builds nothing.

  python3 test_apps/gpu/run_corpus.py [--archive .corpus/corpus.tar.xz] [--preload LIB] [--out DIR]

(`validate_on_gpu.sh corpus` runs it with the staged build's library.)

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
            rc = subprocess.run(cmd, cwd=cwd, env=env, stdout=out, stderr=err, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            rc = 124
        except OSError as e:
            err.write(f"[run_corpus] cannot run {cmd[0]}: {e}\n".encode())
            rc = 127
    with open(prefix + "rc", "w") as f:
        f.write(f"{rc}\n")
    return rc, time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--archive", default=os.path.join(ROOT, ".corpus", "corpus.tar.xz"))
    ap.add_argument("--preload", help="libasyncwatch.so (default: build-gpu/lib, then build/lib)")
    ap.add_argument("--out", default=os.environ.get("OUT") or "corpus-out")
    ap.add_argument("--budget-s", type=float, default=480)
    ap.add_argument("--timeout-s", type=float, default=90)
    ap.add_argument("--programs", help="comma-separated (default: every expectation file)")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated builds (default: all four)")
    ap.add_argument("--sim", help="a check without a GPU: asyncwatch's simulated driver and runtime from this "
                                  "directory (shared-runtime builds only; not a GPU result)")
    opts = ap.parse_args()
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
    for cmd in (["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],):
        try:
            info.append("gpu=" + subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30,
                                                universal_newlines=True).stdout.strip().replace("\n", " / "))
        except Exception as e:  # noqa: BLE001
            info.append(f"gpu=? ({e})")
    with open(os.path.join(results, "info.txt"), "w") as f:
        f.write("\n".join(info) + "\n")
    print("\n".join(info), flush=True)

    exps = []
    for path in sorted(glob.glob(os.path.join(EXPECTED, "*.json"))):
        with open(path) as f:
            e = json.load(f)
        if not opts.programs or e["program"] in opts.programs.split(","):
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
