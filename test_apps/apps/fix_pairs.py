#!/usr/bin/env python3
"""Fix pairs: programs in two variants, the one asyncwatch flags and the one its finding's fix
makes, and the check of asyncwatch's predicted gain (the findings' impact_ns, docs/findings.md,
"Impact") against the measured wall-time difference of the two.

  fix_pairs.py sim --build DIR [--runs 5] [PAIR...]
      on the simulator (CTest fixpair.*): RUNS alternating runs of each variant on the simulator
      without asyncwatch (median wall times), and three traced runs (`asyncwatch run --sim`) of the
      flagged variant for the prediction (the median). Exit 1 when a pair misses.
  fix_pairs.py gpu --build DIR [--out FILE] [--runs 5] [PAIR...]
      on a GPU (test_apps/gpu/fix_pairs.sh): the same with bare runs on the GPU and one traced run.
      Prints the table and writes it to FILE.

The wall time compared is the loop's, where the program prints it (the CUDA programs: "# loop: X
ms" on stderr, the only part the two variants run differently; their set-up is the same), else the
process's (the Python scripts: measured around the run).
  fix_pairs.py list

A pair passes when |predicted - measured| <= max(25 % of measured, 1 ms, the runs' noise: twice the
median absolute deviation of each variant's times, combined; printed) and the finding ranked
first is the pair's (the one whose fix was applied) when the fix gains more than 1 ms, else when
no finding predicts more than the tolerance. Python 3 standard library only; temporary
directories are removed when the check ends.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# One row per pair: the program (test_apps/<program> of the build, or a Python script of the tree),
# the rule whose finding the fix addresses, the arguments on the simulator and on a GPU, and whether
# the fix is expected to gain (pairs whose fix moves or keeps the time: no). sim_env: the simulator's
# settings for the pair (docs/simulator.md): copies that the simulator really makes (staging, queued
# copies) take the machine's memcpy time when it is slower than the modelled rate, so the pair moves
# few bytes at a slower modelled staging rate.
PAIRS = [
    dict(name="pinned_upload", program="fix_pinned_upload", rule="pageable-async-copy", gains=True,
         sim_args=["16M", "4", "2e7"], sim_env={"ASYNCWATCH_SIM_STAGING_GBPS": "0.2"},
         gpu_args=["256M", "4", "2e7"]),
    dict(name="pinned_download", program="fix_pinned_download", rule="pageable-async-copy", gains=True,
         sim_args=["64M", "4", "1e8", "5000"], gpu_args=["64M", "4", "1e8", "5000"]),
    dict(name="overlap_loop", program="fix_overlap_loop", rule="pageable-async-copy", gains=True,
         sim_args=["16M", "8", "4e7", "15000"], gpu_args=["16M", "8", "4e7", "15000"]),
    dict(name="sync_interval", program="fix_sync_interval", rule="explicit-sync", gains=True,
         sim_args=["20", "4e7", "8000", "10"], gpu_args=["20", "4e7", "8000", "10"]),
    dict(name="host_func", program="fix_host_func", rule="deprecated-stream-callback", gains=False,
         sim_args=["20", "4e6", "500"], gpu_args=["20", "4e6", "500"]),
    # The fix moves the loading out of the loop: the process's wall time is what it changes (not).
    dict(name="warm_launch", program="fix_warm_launch", rule="blocking-launch", gains=False, whole_process=True,
         sim_args=["10", "2e6"], gpu_args=["10", "2e6"]),
    # NVIDIA's CUDA sample asyncAPI as the sample writes it (cudaMallocHost), and with malloc.
    dict(name="async_api", program="fix_async_api", rule="pageable-async-copy", gains=True, public=True,
         sim_args=["1M", "4"], sim_env={"ASYNCWATCH_SIM_STAGING_GBPS": "0.05"}, gpu_args=["16M", "4"]),
    # Frameworks, written as their documentation writes them (GPU only: the simulator runs no
    # framework). Each prints its loop's time ("# loop: X ms").
    dict(name="torch_pin_memory", script="test_apps/gpu/fix_torch_pin_memory.py", rule="pageable-async-copy",
         gains=True, public=True, gpu_args=[]),
    dict(name="torch_item_interval", script="test_apps/gpu/fix_torch_item_interval.py", rule="hidden-sync",
         gains=True, public=True, gpu_args=[]),
    dict(name="torch_event_logging", script="test_apps/gpu/fix_torch_event_logging.py", rule="hidden-sync",
         gains=True, public=True, gpu_args=[]),
    dict(name="cupy_pinned", script="test_apps/gpu/fix_cupy_pinned.py", rule="pageable-async-copy",
         gains=True, public=True, gpu_args=[]),
    dict(name="numba_pinned", script="test_apps/gpu/fix_numba_pinned.py", rule="pageable-async-copy",
         gains=True, public=True, gpu_args=[]),
]
TOLERANCE_SHARE = 0.25
TOLERANCE_NS = 1_000_000


def pair_by_name(name):
    for p in PAIRS:
        if name in (p["name"], p.get("program")):
            return p
    raise SystemExit(f"fix_pairs.py: unknown pair {name!r} (known: {', '.join(p['name'] for p in PAIRS)})")


class Tools:
    def __init__(self, build):
        self.build = os.path.abspath(build)
        self.keep = None
        self.asyncwatch = os.environ.get("ASYNCWATCH_BIN") or os.path.join(self.build, "bin", "asyncwatch")
        self.env = dict(os.environ)
        self.env.setdefault("ASYNCWATCH_PRELOAD_LIB", os.path.join(self.build, "lib", "libasyncwatch.so"))
        self.env.setdefault("ASYNCWATCH_SIM_DIR", os.path.join(self.build, "lib", "asyncwatch", "sim"))
        for f in (self.asyncwatch, self.env["ASYNCWATCH_PRELOAD_LIB"]):
            if not os.path.exists(f):
                raise SystemExit(f"fix_pairs.py: missing {f} (build it, or name the build with --build)")

    def env_for(self, pair, mode, base):
        env = dict(base)
        if mode == "sim":
            env.update(pair.get("sim_env", {}))
        return env

    def command(self, pair, fixed, mode):
        args = (["--fixed"] if fixed else []) + pair[f"{mode}_args"]
        if "script" in pair:
            return [sys.executable, os.path.join(ROOT, pair["script"])] + args
        path = os.path.join(self.build, "test_apps", pair["program"])
        if not os.path.exists(path):
            raise SystemExit(f"fix_pairs.py: missing {path} (build target {pair['program']})")
        return [path] + args


def traced_report(tools, pair, fixed, mode, tmp):
    """Runs one variant under asyncwatch; returns its JSON report."""
    out = tempfile.mkdtemp(dir=tmp)
    cmd = [tools.asyncwatch, "run"] + (["--sim"] if mode == "sim" else []) + ["-o", out, "--"] + \
        tools.command(pair, fixed, mode)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=tools.env_for(pair, mode, tools.env), cwd=tmp, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=240)
    wall = int((time.perf_counter() - t0) * 1e9)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr[-2000:]}")
    loop = loop_ns(r.stderr)
    r = subprocess.run([tools.asyncwatch, "report", "--format", "json", out], env=tools.env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=240)
    if r.returncode not in (0, 1):
        raise RuntimeError(f"asyncwatch report {out}: exit {r.returncode}\n{r.stderr[-2000:]}")
    if tools.keep:  # for a look at the model's inputs where a prediction misses
        kept = os.path.join(tools.keep, pair["name"])
        shutil.rmtree(kept, ignore_errors=True)
        shutil.move(out, kept)
        with open(os.path.join(kept, "report.json"), "w") as f:
            f.write(r.stdout)
    else:
        shutil.rmtree(out, ignore_errors=True)
    report = json.loads(r.stdout)
    report["_wall_ns"] = loop if loop is not None else wall
    return report


def loop_ns(stderr):
    """The program's "# loop: X ms" line (stderr), in ns; None without one."""
    for line in stderr.splitlines():
        if line.startswith("# loop: ") and line.endswith(" ms"):
            try:
                return int(float(line[8:-3]) * 1e6)
            except ValueError:
                return None
    return None


def wall_ns(report):
    return report["_wall_ns"]


def prediction(pair, report):
    """The pair's predicted gain (its rule's findings' impact_ns), and the first-ranked finding."""
    findings = report["findings"]
    predicted = sum(f.get("impact_ns", 0) for f in findings if f["id"] == pair["rule"])
    top = findings[0] if findings else None
    return predicted, top


def spread(values):
    """Twice the median absolute deviation: how far a run's time strays, as the runs show it."""
    m = statistics.median(values)
    return 2 * statistics.median(abs(v - m) for v in values)


def judge(pair, predicted, measured, top, noise=0):
    # 25 % or 1 ms, or the measurement's own noise where the machine is noisier than that (the
    # table prints it: on a quiet machine it is below both).
    tolerance = max(TOLERANCE_SHARE * abs(measured), TOLERANCE_NS, noise)
    close = abs(predicted - measured) <= tolerance
    if not pair["gains"] and predicted <= tolerance and measured < 0:
        # A fix that gains nothing may cost a little (a warm-up done apart from the work it would
        # have overlapped: on the simulator, 8 module loads one after another): "no gain" holds.
        close = True
    if pair["gains"]:
        ranked = top is not None and top["id"] == pair["rule"]
    else:
        ranked = top is None or top.get("impact_ns", 0) <= tolerance
    return close, ranked


def row(pair, predicted, measured, top, close, ranked, tolerance):
    ratio = f"{predicted / measured:.2f}" if abs(measured) >= TOLERANCE_NS else "-"
    top_text = f"{top['id']} ({top.get('impact_ns', 0) / 1e6:.1f} ms)" if top else "(none)"
    return (f"{pair['name']:<20} {predicted / 1e6:>12.1f} {measured / 1e6:>12.1f} {ratio:>6} {tolerance / 1e6:>8.1f}  "
            f"{'yes' if close else 'NO':<6} {'yes' if ranked else 'NO':<6} {top_text}")


HEADER = (f"{'pair':<20} {'predicted_ms':>12} {'measured_ms':>12} {'ratio':>6} {'tol_ms':>8}  {'within':<6} "
          f"{'top_ok':<6} ranked first")


def timed(cmd, env, whole_process=False):
    """One run's wall time: the loop's when the program prints it, else the process's."""
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=240)
    t = int((time.perf_counter() - t0) * 1e9)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr[-2000:]}")
    loop = None if whole_process else loop_ns(r.stderr)
    return loop if loop is not None else t


def bare_env(tools, pair, mode):
    """The environment of a run without asyncwatch (on the simulator: its libraries first)."""
    env = tools.env_for(pair, mode, os.environ)
    if mode == "sim":
        sim = tools.env["ASYNCWATCH_SIM_DIR"]
        env["LD_LIBRARY_PATH"] = sim + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


def check_pair(tools, pair, mode, runs, traced_runs, tmp):
    """Measured: RUNS alternating bare runs of each variant (medians); predicted: the flagged
    variant's traced runs (the median). Returns the table's line and whether it passed."""
    walls = {False: [], True: []}
    env = bare_env(tools, pair, mode)
    for _ in range(runs):
        for fixed in (False, True):
            walls[fixed].append(timed(tools.command(pair, fixed, mode), env, pair.get("whole_process", False)))
    measured = statistics.median(walls[False]) - statistics.median(walls[True])
    noise = int((spread(walls[False]) ** 2 + spread(walls[True]) ** 2) ** 0.5)
    reports = [traced_report(tools, pair, False, mode, tmp) for _ in range(traced_runs)]
    predictions = sorted((prediction(pair, r) for r in reports), key=lambda p: p[0])
    predicted, top = predictions[len(predictions) // 2]
    close, ranked = judge(pair, predicted, measured, top, noise)
    tolerance = max(TOLERANCE_SHARE * abs(measured), TOLERANCE_NS, noise)
    line = row(pair, predicted, measured, top, close, ranked, tolerance)
    line += (f"  [noise {noise / 1e6:.1f} ms; ms: flagged {[round(w / 1e6, 1) for w in walls[False]]}, fixed "
             f"{[round(w / 1e6, 1) for w in walls[True]]}, predicted {[round(p[0] / 1e6, 1) for p in predictions]}]")
    return line, (close, ranked)


def cmd_check(opts, mode):
    tools = Tools(opts.build)
    tools.keep = os.path.abspath(opts.keep) if opts.keep else None
    if opts.pairs:
        pairs = [pair_by_name(n) for n in opts.pairs]
    else:
        pairs = [p for p in PAIRS if mode == "gpu" or "sim_args" in p]
    # The table is written as it grows: a run cut short (a time limit) leaves the pairs done so far.
    out = open(opts.out, "w") if opts.out else None

    def emit(line):
        print(line, flush=True)
        if out:
            out.write(line + "\n")
            out.flush()

    emit(HEADER)
    failed = False
    done = within = top_ok = 0
    with tempfile.TemporaryDirectory(prefix="aw-fixpair-") as tmp:
        for pair in pairs:
            if f"{mode}_args" not in pair:
                emit(f"{pair['name']:<20} (GPU only)")
                continue
            try:
                line, (close, ranked) = check_pair(tools, pair, mode, opts.runs, 3 if mode == "sim" else 1, tmp)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                lines = str(e).strip().splitlines()
                # the command and its status, and the program's last line (an exception's message)
                why = (lines[0] + (f" | {lines[-1][:300]}" if len(lines) > 1 else "")) if lines else repr(e)
                line, close, ranked = f"{pair['name']:<20} ERROR {why}", False, False
            emit(line)
            done += 1
            within += close
            top_ok += ranked
            failed = failed or not (close and ranked)
    emit(f"# {within} of {done} within tolerance (25 %, 1 ms or the runs' noise); the top-ranked finding right in "
         f"{top_ok} of {done}; {sum(1 for p in pairs if p.get('public'))} of {len(pairs)} pairs written as a "
         f"public sample or a framework's documentation writes them")
    if out:
        out.close()
    # On the simulator a miss fails (CTest); on a GPU the table is the result.
    return 1 if failed and mode == "sim" else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name, runs in (("sim", 5), ("gpu", 5)):
        p = sub.add_parser(name)
        p.add_argument("--build", required=True)
        p.add_argument("--runs", type=int, default=runs)
        p.add_argument("--out")
        p.add_argument("--keep", help="keep each flagged run's traces and JSON report in KEEP/PAIR")
        p.add_argument("pairs", nargs="*")
    sub.add_parser("list")
    opts = ap.parse_args()
    if opts.cmd == "list":
        for p in PAIRS:
            print(p["name"], p.get("program") or p.get("script"), p["rule"])
        return 0
    return cmd_check(opts, opts.cmd)


if __name__ == "__main__":
    sys.exit(main())
