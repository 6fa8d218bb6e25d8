#!/usr/bin/env python3
"""Builds the call-site corpus (test_apps/corpus/README.md) from its public sources and packs it.

  build_corpus.py --repo OWNER/NAME=GIT_DIR (each of the three) --bin-dir BIN_DIR [--src-dir SRC_DIR] [-j N]
                  [--programs P,Q] [--dry-run] [--no-pack]
  build_corpus.py --pack-only --bin-dir BIN_DIR
  build_corpus.py --python --repo OWNER/NAME=GIT_DIR (each Python program's) --src-dir SRC_DIR [--programs P,Q]
                  [--dry-run]

The programs, their repositories, commits, directories and source files are read from
expected/*.json (the "origin" and "sources" fields): nothing of that is repeated here. Each origin
directory (and the repository's shared include directory, REPO_INCLUDES) is extracted with
`git --git-dir GIT_DIR archive COMMIT PATH | tar -x` into SRC_DIR/OWNER/NAME (default: BIN_DIR/../src),
then every program is built four ways with nvcc for sm_90, host code at -g -O0 and -g -O2, with
nvcc's default static runtime and with -cudart shared, into BIN_DIR/<program>.<O0|O2>.<static|shared>
(the names run_corpus.py and check_corpus.py use). The libraries come from the expectation's
"libraries" (libcublas.so.13: -lcublas); other per-program flags are in PROGRAM_FLAGS below.
BIN_DIR/build-info.json records each binary's command, origin and nvcc version, and nvcc's
NVCC_PREPEND_FLAGS / NVCC_APPEND_FLAGS when set (a build with another host compiler or flags).

Packing copies the 88 binaries of BIN_DIR (all must be there) with their debug sections compressed
(objcopy --compress-debug-sections: the build ids, which the checker matches, do not change) into
corpus/bin/ of .corpus/corpus.tar.xz in the repository this script is in (git-ignored), which
test_apps/gpu/run_corpus.py unpacks on the GPU machine. BIN_DIR itself is left as built: it is what
check_corpus.py reads the traces' symbols from. --pack-only packs BIN_DIR as it is, building nothing.

--python takes the Python programs instead (expectation files with "language": "python"): each
program's "files" at its origin commit, `git archive`d from GIT_DIR into SRC_DIR/<program>/ (their
paths in the repository kept; every file checked against `git ls-tree` and its blob hash recorded),
then packed with pycorpus/manifest.json (program, repository, commit, files, blob ids) into
pycorpus/ of .corpus/pycorpus.tar.xz, which `test_apps/gpu/run_corpus.py --python` runs.

The third-party sources and binaries must stay outside the repository: SRC_DIR and BIN_DIR inside
it are refused. Python 3 standard library, git, tar, nvcc, objcopy. Exit 0 when every build (and
the pack) succeeded, 1 otherwise, 2 on usage errors.
"""
import argparse
import concurrent.futures
import glob
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EXPECTED = os.path.join(HERE, "expected")
ARCHIVE = os.path.join(ROOT, ".corpus", "corpus.tar.xz")
ARCH = "sm_90"
NVCC_RELEASE = "13.0"  # the compiler the expectations were checked with
# Build name suffix -> nvcc options. "static" is nvcc's default runtime (nothing passed).
OPT_LEVELS = {"O0": ["-g", "-O0"], "O2": ["-g", "-O2"]}
RUNTIMES = {"static": [], "shared": ["-cudart", "shared"]}
VARIANTS = [f"{o}.{r}" for o in OPT_LEVELS for r in RUNTIMES]  # the order check_corpus.py uses
# Include directories each repository's programs get, relative to the repository root (extracted too).
REPO_INCLUDES = {"NVIDIA/cuda-samples": ["Common"]}
# The one table of per-program flags beyond the libraries of the expectation file, put after the
# sources. UnifiedMemoryStreams: the sample's pthread variant (the GPU machine has no OpenMP
# runtime), with the C++17 and extended lambdas its CMakeLists.txt asks for.
PROGRAM_FLAGS = {
    "UnifiedMemoryStreams": ["-DUSE_PTHREADS", "-std=c++17", "--extended-lambda", "-lpthread"],
    "simpleCallback": ["-lpthread"],  # multithreading.cpp's pthread_create
    "olcf_overlap": ["-DUSE_STREAMS"],  # the streamed version (hw7/readme.md's second build)
}


def load_expectations(programs):
    exps = []
    for path in sorted(glob.glob(os.path.join(EXPECTED, "*.json"))):
        with open(path) as f:
            e = json.load(f)
        if e.get("language", "cuda") == "cuda":  # the Python programs: --python
            exps.append(e)
    names = {e["program"] for e in exps}
    unknown = set(PROGRAM_FLAGS) - names
    if unknown:  # a table entry whose program is gone would be silently unused
        raise SystemExit(f"build_corpus: PROGRAM_FLAGS names programs without an expectation file: {sorted(unknown)}")
    missing = set(programs or []) - names
    if missing:
        raise SystemExit(f"build_corpus: no expectation file for {', '.join(sorted(missing))}")
    return [e for e in exps if not programs or e["program"] in programs]


def library_flags(exp):
    flags = []
    for lib in exp.get("libraries", []):
        m = re.fullmatch(r"lib(.+?)\.so(\.\d+)*", lib)
        if not m:
            raise SystemExit(f"build_corpus: {exp['program']}: cannot make a -l option of library {lib!r}")
        flags.append("-l" + m.group(1))
    return flags


def inside(path, top):
    path, top = os.path.realpath(path), os.path.realpath(top)
    return path == top or path.startswith(top + os.sep)


def repo_dir(src_dir, repo):
    return os.path.join(src_dir, *repo.split("/"))


def extract(exps, git_dirs, src_dir, dry_run):
    """Extracts every origin directory at its commit: SRC_DIR/OWNER/NAME/<path>, fresh each time."""
    wanted = {}  # (repo, commit) -> paths
    for e in exps:
        o = e["origin"]
        wanted.setdefault((o["repo"], o["commit"]), set()).update([o["path"]] + REPO_INCLUDES.get(o["repo"], []))
    commits = {}
    for (repo, commit), paths in sorted(wanted.items()):
        if commits.setdefault(repo, commit) != commit:
            raise SystemExit(f"build_corpus: {repo} is named at two commits ({commits[repo]}, {commit})")
        if repo not in git_dirs:
            raise SystemExit(f"build_corpus: no --repo {repo}=GIT_DIR (needed at {commit})")
        git = ["git", "--git-dir", git_dirs[repo]]
        if subprocess.run(git + ["cat-file", "-e", commit + "^{commit}"], stderr=subprocess.DEVNULL).returncode:
            raise SystemExit(f"build_corpus: {git_dirs[repo]} has no commit {commit} of {repo}")
        dest = repo_dir(src_dir, repo)
        print(f"extract {repo}@{commit[:12]}: {' '.join(sorted(paths))} -> {dest}", flush=True)
        if dry_run:
            continue
        shutil.rmtree(dest, ignore_errors=True)
        os.makedirs(dest)
        archive = subprocess.Popen(git + ["archive", "--format=tar", commit, "--"] + sorted(paths),
                                   stdout=subprocess.PIPE)
        untar = subprocess.run(["tar", "-x", "-C", dest], stdin=archive.stdout)
        archive.stdout.close()
        if archive.wait() or untar.returncode:
            raise SystemExit(f"build_corpus: extracting {repo}@{commit} failed")
        # A partial mirror (blobs of large files left out) can make git archive print "invalid object"
        # for a file outside these paths and still succeed: check that every file named is there.
        listed = subprocess.run(git + ["ls-tree", "-r", "--name-only", "-z", commit, "--"] + sorted(paths),
                                stdout=subprocess.PIPE, check=True).stdout.decode().split("\0")
        absent = [f for f in listed if f and not os.path.lexists(os.path.join(dest, f))]
        if absent:
            raise SystemExit(f"build_corpus: {repo}@{commit}: {len(absent)} files not extracted: {absent[:5]}")
    for e in exps:
        d = os.path.join(repo_dir(src_dir, e["origin"]["repo"]), e["origin"]["path"])
        for s in e["sources"]:
            if not dry_run and not os.path.isfile(os.path.join(d, s)):
                raise SystemExit(f"build_corpus: {e['program']}: no source {s} in {d}")


def build_jobs(exps, src_dir, bin_dir, nvcc):
    jobs = []
    for e in exps:
        o = e["origin"]
        top = repo_dir(src_dir, o["repo"])
        includes = [f"-I{os.path.join(top, i)}" for i in REPO_INCLUDES.get(o["repo"], [])]
        for opt, opt_flags in OPT_LEVELS.items():
            for rt, rt_flags in RUNTIMES.items():
                name = f"{e['program']}.{opt}.{rt}"
                # Run in the program's directory with bare source names: DWARF names the files as the
                # expectations do (main.cpp), and the sample's own headers are found beside them.
                cmd = ([nvcc, f"-arch={ARCH}"] + opt_flags + rt_flags + includes + ["-o", name + ".tmp"]
                       + e["sources"] + PROGRAM_FLAGS.get(e["program"], []) + library_flags(e))
                jobs.append({"name": name, "program": e["program"], "cwd": os.path.join(top, o["path"]),
                             "cmd": cmd, "origin": o})
    return jobs


def run_build(job, bin_dir):
    """One nvcc run writing <name>.tmp in the source directory, then moved into BIN_DIR."""
    t0 = time.monotonic()
    p = subprocess.run(job["cmd"], cwd=job["cwd"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    tmp = os.path.join(job["cwd"], job["name"] + ".tmp")
    if p.returncode == 0 and os.path.isfile(tmp):
        shutil.move(tmp, os.path.join(bin_dir, job["name"]))
    elif os.path.exists(tmp):
        os.unlink(tmp)
    return p.returncode, p.stdout, time.monotonic() - t0


def nvcc_version(nvcc):
    try:
        out = subprocess.run([nvcc, "--version"], stdout=subprocess.PIPE, universal_newlines=True).stdout
    except OSError as e:
        raise SystemExit(f"build_corpus: cannot run {nvcc}: {e}")
    m = re.search(r"release (\d+\.\d+), (V[\d.]+)", out)
    return m.group(1) if m else "?", (m.group(2) if m else out.strip().splitlines()[-1])


def build(opts, exps, git_dirs):
    release, full = nvcc_version(opts.nvcc)
    print(f"nvcc {opts.nvcc}: release {release} ({full})", flush=True)
    # nvcc's own variables change every build (another host compiler, other flags): recorded with them.
    nvcc_env = {k: os.environ[k] for k in ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS") if os.environ.get(k)}
    for k, v in nvcc_env.items():
        print(f"{k}={v}", flush=True)
    if release != NVCC_RELEASE:
        print(f"build_corpus: warning: the expectations were checked with nvcc {NVCC_RELEASE}, this is {release}",
              file=sys.stderr)
    # Every program's directory, not only those of --programs: the extraction replaces the whole tree.
    extract(load_expectations(None), git_dirs, opts.src_dir, opts.dry_run)
    jobs = build_jobs(exps, opts.src_dir, opts.bin_dir, opts.nvcc)
    if opts.dry_run:
        for j in jobs:
            print(f"(cd {j['cwd']} && {' '.join(j['cmd'])})")
        return 0
    os.makedirs(opts.bin_dir, exist_ok=True)
    info_path = os.path.join(opts.bin_dir, "build-info.json")
    info = {"nvcc": full, "nvcc_env": nvcc_env, "binaries": {}}
    if os.path.exists(info_path):  # a partial rebuild (--programs) keeps the other binaries' records
        with open(info_path) as f:
            info["binaries"] = json.load(f).get("binaries", {})
    failed, t0 = [], time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=opts.jobs) as pool:
        futures = {pool.submit(run_build, j, opts.bin_dir): j for j in jobs}
        for n, fut in enumerate(concurrent.futures.as_completed(futures), 1):
            j = futures[fut]
            rc, output, secs = fut.result()
            print(f"[{n}/{len(jobs)}] {j['name']:36} {'ok' if rc == 0 else f'FAILED rc={rc}':10} {secs:5.1f} s",
                  flush=True)
            if output.strip():
                print("    " + output.strip().replace("\n", "\n    "), flush=True)
            if rc:
                failed.append(j["name"])
                info["binaries"].pop(j["name"], None)
                continue
            info["binaries"][j["name"]] = {
                "origin": j["origin"], "nvcc": full, "nvcc_env": nvcc_env,
                "cwd": os.path.relpath(j["cwd"], opts.src_dir),
                "command": [os.path.basename(c) if c == opts.nvcc else c.replace(opts.src_dir, "$SRC")
                            for c in j["cmd"]],
                "built": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    with open(info_path + ".tmp", "w") as f:
        json.dump(info, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(info_path + ".tmp", info_path)
    print(f"built {len(jobs) - len(failed)} of {len(jobs)} binaries into {opts.bin_dir} "
          f"in {time.monotonic() - t0:.0f} s (-j{opts.jobs})", flush=True)
    if failed:
        print(f"build_corpus: {len(failed)} failed: {' '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def pack(bin_dir, archive):
    """Every binary of every expectation file, debug sections compressed, into corpus/bin/ of archive."""
    names = [f"{e['program']}.{v}" for e in load_expectations(None) for v in VARIANTS]
    missing = [n for n in names if not os.path.isfile(os.path.join(bin_dir, n))]
    if missing:
        print(f"build_corpus: not packed: {len(missing)} binaries missing from {bin_dir}: {' '.join(missing)}",
              file=sys.stderr)
        return 1
    os.makedirs(os.path.dirname(archive), exist_ok=True)
    stage = tempfile.mkdtemp(prefix="aw-corpus-pack-")
    try:
        stage_bin = os.path.join(stage, "corpus", "bin")
        os.makedirs(stage_bin)
        extra = ["build-info.json"] if os.path.isfile(os.path.join(bin_dir, "build-info.json")) else []
        raw = packed = 0
        for n in names + extra:
            src, dst = os.path.join(bin_dir, n), os.path.join(stage_bin, n)
            raw += os.path.getsize(src)
            if n in extra:
                shutil.copy2(src, dst)
            elif subprocess.run(["objcopy", "--compress-debug-sections", src, dst]).returncode:
                print(f"build_corpus: objcopy failed on {src}", file=sys.stderr)
                return 1
            packed += os.path.getsize(dst)
        tmp = archive + ".tmp"

        def plain(ti):  # no owner or host details in the archive
            ti.uid = ti.gid = 0
            ti.uname = ti.gname = ""
            return ti

        with tarfile.open(tmp, "w:xz", preset=9) as t:
            for d in ("corpus", "corpus/bin"):
                t.add(os.path.join(stage, d), d, recursive=False, filter=plain)
            for n in sorted(names + extra):
                t.add(os.path.join(stage_bin, n), f"corpus/bin/{n}", filter=plain)
        os.replace(tmp, archive)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    print(f"packed {len(names)} binaries{' and build-info.json' if extra else ''} of {bin_dir}: "
          f"{raw / 2**20:.1f} MiB, {packed / 2**20:.1f} MiB with debug sections compressed, "
          f"{archive}: {os.path.getsize(archive) / 2**20:.1f} MiB", flush=True)
    return 0


ARCHIVE_PY = os.path.join(ROOT, ".corpus", "pycorpus.tar.xz")


def load_python(programs):
    exps = []
    for path in sorted(glob.glob(os.path.join(EXPECTED, "*.json"))):
        with open(path) as f:
            e = json.load(f)
        if e.get("language") == "python":
            exps.append(e)
    missing = set(programs or []) - {e["program"] for e in exps}
    if missing:
        raise SystemExit(f"build_corpus: no Python expectation file for {', '.join(sorted(missing))}")
    return [e for e in exps if not programs or e["program"] in programs]


def blob_ids(git, commit, files):
    """{path: blob id} of files at commit, from `git ls-tree`; a path absent there is left out."""
    out = subprocess.run(git + ["ls-tree", "-r", "-z", commit, "--"] + files, stdout=subprocess.PIPE,
                         check=True).stdout.decode().split("\0")
    ids = {}
    for entry in filter(None, out):
        meta, _, path = entry.partition("\t")
        ids[path] = meta.split()[2]
    return ids


def extract_python(exps, git_dirs, src_dir, dry_run):
    """Each program's files at its commit into SRC_DIR/<program>/ (fresh); -> the manifest."""
    manifest = []
    for e in exps:
        o = e["origin"]
        if o["repo"] not in git_dirs:
            raise SystemExit(f"build_corpus: no --repo {o['repo']}=GIT_DIR (needed at {o['commit']})")
        git = ["git", "--git-dir", git_dirs[o["repo"]]]
        if subprocess.run(git + ["cat-file", "-e", o["commit"] + "^{commit}"], stderr=subprocess.DEVNULL).returncode:
            raise SystemExit(f"build_corpus: {git_dirs[o['repo']]} has no commit {o['commit']} of {o['repo']}")
        ids = blob_ids(git, o["commit"], e["files"])
        absent = [f for f in e["files"] if f not in ids]
        if absent:
            raise SystemExit(f"build_corpus: {e['program']}: {o['repo']}@{o['commit'][:12]} has no {absent}")
        dest = os.path.join(src_dir, e["program"])
        print(f"extract {o['repo']}@{o['commit'][:12]}: {' '.join(e['files'])} -> {dest}", flush=True)
        manifest.append({"program": e["program"], "repo": o["repo"], "commit": o["commit"], "script": e["script"],
                         "files": {f: ids[f] for f in e["files"]}})
        if dry_run:
            continue
        shutil.rmtree(dest, ignore_errors=True)
        os.makedirs(dest)
        archive = subprocess.Popen(git + ["archive", "--format=tar", o["commit"], "--"] + e["files"],
                                   stdout=subprocess.PIPE)
        untar = subprocess.run(["tar", "-x", "-C", dest], stdin=archive.stdout)
        archive.stdout.close()
        if archive.wait() or untar.returncode:
            raise SystemExit(f"build_corpus: extracting {e['program']} from {o['repo']}@{o['commit']} failed")
        for f in e["files"]:
            got = subprocess.run(["git", "hash-object", os.path.join(dest, f)], stdout=subprocess.PIPE,
                                 universal_newlines=True).stdout.strip()
            if got != ids[f]:
                raise SystemExit(f"build_corpus: {e['program']}: {f} extracted as {got}, the commit has {ids[f]}")
    return manifest


def pack_python(src_dir, manifest, archive):
    """SRC_DIR/<program>/ of every program in the manifest, and the manifest, into pycorpus/ of archive."""
    os.makedirs(os.path.dirname(archive), exist_ok=True)
    tmp = archive + ".tmp"

    def plain(ti):  # no owner or host details in the archive
        ti.uid = ti.gid = 0
        ti.uname = ti.gname = ""
        return ti

    data = (json.dumps({"programs": manifest}, indent=1, sort_keys=True) + "\n").encode()
    with tarfile.open(tmp, "w:xz", preset=9) as t:
        info = plain(tarfile.TarInfo("pycorpus/manifest.json"))
        info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
        t.addfile(info, io.BytesIO(data))
        for m in manifest:
            for f in sorted(m["files"]):
                t.add(os.path.join(src_dir, m["program"], f), f"pycorpus/{m['program']}/{f}", filter=plain)
    os.replace(tmp, archive)
    n = sum(len(m["files"]) for m in manifest)
    print(f"packed {len(manifest)} Python programs ({n} files) of {src_dir}: {archive}: "
          f"{os.path.getsize(archive) / 1024:.1f} KiB", flush=True)
    return 0


def python_corpus(opts, git_dirs):
    if not opts.src_dir:
        print("build_corpus: --python needs --src-dir (outside the repository)", file=sys.stderr)
        return 2
    if opts.programs and not opts.dry_run:
        print("build_corpus: --python packs every program: --programs only with --dry-run", file=sys.stderr)
        return 2
    exps = load_python(opts.programs.split(",") if opts.programs else None)
    manifest = extract_python(exps, git_dirs, opts.src_dir, opts.dry_run)
    if opts.dry_run or opts.no_pack:
        return 0
    return pack_python(opts.src_dir, manifest, opts.archive or ARCHIVE_PY)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", action="append", default=[], metavar="OWNER/NAME=GIT_DIR",
                    help="a source repository's (bare) git directory; once per repository")
    ap.add_argument("--bin-dir", help="where the binaries are built (outside the repository)")
    ap.add_argument("--src-dir", help="where the sources are extracted (default: BIN_DIR/../src)")
    ap.add_argument("--nvcc", default="/usr/local/cuda/bin/nvcc")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="parallel nvcc runs (default 1)")
    ap.add_argument("--programs", help="comma-separated: build only these (the pack still takes all of BIN_DIR)")
    ap.add_argument("--dry-run", action="store_true", help="print the extractions and commands, run nothing")
    ap.add_argument("--no-pack", action="store_true", help="build only")
    ap.add_argument("--pack-only", action="store_true", help="pack what BIN_DIR holds, build nothing")
    ap.add_argument("--archive", help=f"default: {os.path.relpath(ARCHIVE, ROOT)} "
                                      f"({os.path.relpath(ARCHIVE_PY, ROOT)} with --python) in this repository")
    ap.add_argument("--python", action="store_true", help="the Python programs: extract and pack, nothing built")
    opts = ap.parse_args()
    if not opts.python and not opts.bin_dir:
        ap.error("--bin-dir is required (except with --python)")
    if opts.bin_dir:
        opts.bin_dir = os.path.abspath(opts.bin_dir)
    if opts.src_dir or opts.bin_dir:
        opts.src_dir = os.path.abspath(opts.src_dir or os.path.join(os.path.dirname(opts.bin_dir), "src"))
    for what, d in (("--bin-dir", opts.bin_dir), ("--src-dir", opts.src_dir)):
        if d and inside(d, ROOT):
            print(f"build_corpus: {what} {d} is inside the repository (third-party code stays outside)",
                  file=sys.stderr)
            return 2
    opts.archive_given, opts.archive = opts.archive, opts.archive or ARCHIVE
    if opts.pack_only:
        if opts.no_pack or opts.programs or opts.dry_run:
            print("build_corpus: --pack-only builds nothing: no --programs, --no-pack, --dry-run", file=sys.stderr)
            return 2
        return pack(opts.bin_dir, opts.archive)
    git_dirs = {}
    for r in opts.repo:
        name, sep, path = r.partition("=")
        if not sep or name.count("/") != 1 or not path:
            print(f"build_corpus: --repo {r!r}: want OWNER/NAME=GIT_DIR", file=sys.stderr)
            return 2
        git_dirs[name] = os.path.abspath(path)
    if opts.python:
        opts.archive = opts.archive_given
        return python_corpus(opts, git_dirs)
    if opts.jobs < 1:
        print("build_corpus: -j wants at least 1", file=sys.stderr)
        return 2
    exps = load_expectations(opts.programs.split(",") if opts.programs else None)
    rc = build(opts, exps, git_dirs)
    if rc or opts.dry_run or opts.no_pack:
        return rc
    return pack(opts.bin_dir, opts.archive)


if __name__ == "__main__":
    sys.exit(main())
