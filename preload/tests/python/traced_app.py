"""What python_lines_test.py and borrowed_test.py share: the check list, the marked lines of their
target program, running it traced on the simulator and reporting its trace. Imported from the
tests' own directory (Python puts a script's directory first on sys.path)."""
import os
import re
import subprocess
import sys

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def summary():
    """Prints the outcome; the exit status: 0 when every check passed, 1 otherwise."""
    print(f"{len(failures)} check(s) failed" if failures else "all checks passed")
    return 1 if failures else 0


def marked_lines(app):
    """{mark: line number} of each `# LINE:mark` comment in the file `app`."""
    with open(app) as f:
        return {m.group(1): n for n, text in enumerate(f, 1) for m in [re.search(r"# LINE:(\w+)", text)] if m}


def run_traced(aw, out_dir, env_extra, args):
    """Runs this interpreter on `args` as `asyncwatch run --sim` runs a program, but with
    $AW_PRELOAD_PREFIX (a sanitizer runtime, which must come first) in front of the library in
    LD_PRELOAD; the trace goes to out_dir (created)."""
    prefix = os.path.dirname(os.path.dirname(os.path.abspath(aw)))
    lib = os.path.join(prefix, "lib", "libasyncwatch.so")
    sim = os.environ.get("ASYNCWATCH_SIM_DIR", os.path.join(prefix, "lib", "asyncwatch", "sim"))
    os.makedirs(out_dir)
    env = dict(os.environ, **env_extra)
    env["LD_PRELOAD"] = os.environ.get("AW_PRELOAD_PREFIX", "") + lib
    env["LD_LIBRARY_PATH"] = sim + (":" + os.environ["LD_LIBRARY_PATH"] if os.environ.get("LD_LIBRARY_PATH") else "")
    env["ASYNCWATCH_OUTPUT_DIR"] = out_dir
    return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=120)


def report(aw, out_dir, fmt, env_extra=None):
    """The text of `asyncwatch report --format fmt out_dir`; raises when it fails."""
    env = dict(os.environ, **(env_extra or {}))
    r = subprocess.run([aw, "report", "--format", fmt, out_dir], env=env, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"asyncwatch report --format {fmt} failed ({r.returncode}): {r.stderr}")
    return r.stdout
