#!/usr/bin/env python3
"""Summary mode against full mode on one simulator program (docs/performance.md, "Summary mode").

Runs PROGRAM ARGS twice under `asyncwatch run --sim` (full trace, then --summary), prints each trace's
size and the analyzer's findings count, and compares the JSON findings less what depends on the run's
timing (times, impact, shares, messages, which quote times) and on the process (pids, addresses):
rule, severity, cause, API, direction, memory, kernel, count, bytes, call site, threads, evidence,
the kernels waited for (not how many launches of each: estimated from the replayed order in a summary
trace), NVTX ranges. Two runs take the same decisions only where none depends on how
long a call took: the stack threshold (ASYNCWATCH_LAUNCH_STACK_THRESHOLD_US) is set out of reach and
--min-blocked-us to MIN_US (default 5000): a loaded machine makes the simulator's calls block for a
millisecond at random, a program's sleep kernels make its flagged calls block far longer.
With --trace-limit SIZE the second run is a flight-recorder run (`--trace-limit SIZE`) instead of
--summary: its report must say so and give its window (printed), and its findings are compared the same
way (they are the whole run's, from the summaries, whatever the window holds).
Exit 0 when they are equal, 1 when not (the difference is printed), 2 on a usage or run error.

usage: summary_compare.py BUILD_DIR [--keep DIR] [--min-blocked-us MIN_US] [--attempts N] [--trace-limit SIZE]
                          -- PROGRAM ARGS...
  --attempts  run both ways up to N times until the findings are equal (default 1): on a loaded machine
              a call of the program may block past MIN_US in one run and not in the other
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

OUT_OF_REACH_US = 100_000_000  # 100 s: no call of a test program blocks that long
MIN_BLOCKED_US = 5000

# Keys that say how long calls took or how the run went in time, or name this process's addresses.
TIMING_KEYS = {"blocked_ns", "impact_ns", "impact_share", "impact_basis", "share_of_wall", "message",
               "blocked_ns_total", "pid", "address", "caused_by", "fingerprint", "in_baseline",
               "outstanding_launches_max", "stream_drained_before_return", "event_waits",
               "completed_at_return"}  # (whether the stream had drained when the call returned: a race)


# Estimated from the replayed order in a summary trace (docs/configuration.md, "Summary mode"): the
# kernels are compared, not their counts.
ORDER_KEYS = {"waited_for"}


def strip(v):
    if isinstance(v, dict):
        return {k: (sorted(w["kernel"] for w in x) if k in ORDER_KEYS else strip(x)) for k, x in v.items()
                if k not in TIMING_KEYS}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v


TRACE_LIMIT = None  # --trace-limit: the second run is a flight-recorder run


def run(build, out, summary, program):
    cmd = [os.path.join(build, "bin", "asyncwatch"), "run", "--sim", "--format", "json", "-o", out,
           "--report-output", os.path.join(out, "report.json"), "--min-blocked-us", str(MIN_BLOCKED_US)]
    if summary:
        cmd += ["--trace-limit", TRACE_LIMIT] if TRACE_LIMIT else ["--summary"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASYNCWATCH_") or k.startswith("ASYNCWATCH_SIM_")}
    env["ASYNCWATCH_LAUNCH_STACK_THRESHOLD_US"] = str(OUT_OF_REACH_US)
    p = subprocess.run(cmd + ["--"] + program, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode not in (0, 1):  # 1: findings (the default --fail-on)
        sys.stderr.write(p.stderr)
        raise SystemExit(f"summary_compare: run exited {p.returncode}")
    traces = [os.path.join(out, f) for f in os.listdir(out) if f.endswith(".awtrace")]
    size = sum(os.path.getsize(t) for t in traces)
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    return size, report


def key(f):
    site = f.get("call_site") or {}
    return (f["id"], f.get("cause") or "", f.get("api") or "", f.get("kernel") or "", site.get("file") or "",
            site.get("line") or 0, f.get("host_memory") or "", f.get("direction") or "")


def main():
    argv = sys.argv[1:]
    if "--" not in argv:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    i = argv.index("--")
    opts, program = argv[:i], argv[i + 1:]
    if not opts or not program:
        return 2
    build = os.path.abspath(opts[0])
    keep = opts[opts.index("--keep") + 1] if "--keep" in opts else None
    if "--min-blocked-us" in opts:
        global MIN_BLOCKED_US
        MIN_BLOCKED_US = int(opts[opts.index("--min-blocked-us") + 1])
    attempts = int(opts[opts.index("--attempts") + 1]) if "--attempts" in opts else 1
    if "--trace-limit" in opts:
        global TRACE_LIMIT
        TRACE_LIMIT = opts[opts.index("--trace-limit") + 1]
    rc = 1
    for attempt in range(attempts):
        if attempt:
            print(f"attempt {attempt + 1} of {attempts}")
        rc = compare(build, keep, program)
        if rc != 1:
            break
    return rc


def compare(build, keep, program):
    work = tempfile.mkdtemp(prefix="aw-summary-compare.")
    try:
        results = {}
        second = "flight" if TRACE_LIMIT else "summary"
        says = "flight-recorder trace" if TRACE_LIMIT else "summary trace"
        for mode in ("full", second):
            out = os.path.join(work, mode)
            results[mode] = run(build, out, mode != "full", program)
        for mode, (size, report) in results.items():
            notes = [n for p in report["processes"] for n in p.get("notes", []) if n.startswith(says)]
            print(f"{mode:8s} trace {size / 1048576:9.2f} MiB  findings {len(report['findings'])}  "
                  f"calls {sum(p.get('cuda_calls', 0) for p in report['processes'])}"
                  + (f"  (report says: {says})" if notes else ""))
            for p in report["processes"]:
                if "flight_window" in p:
                    print(f"{'':8s} window {json.dumps(p['flight_window'], sort_keys=True)}")
        full = sorted((strip(f) for f in results["full"][1]["findings"]), key=key)
        summ = sorted((strip(f) for f in results[second][1]["findings"]), key=key)
        says_summary = any(n.startswith(says) for p in results[second][1]["processes"] for n in p.get("notes", []))
        if not says_summary:
            print(f"summary_compare: the {second} trace's report does not say it is a {says}")
            return 1
        if not full:
            print("summary_compare: the program gave no finding: nothing was compared")
            return 1
        if full == summ:
            print(f"findings equal ({len(full)} findings; timings left out)")
            return 0
        print("findings differ (timings left out):")
        for a, b in zip(full + [None] * len(summ), summ + [None] * len(full)):
            if a == b:
                continue
            if a is None or b is None:
                print("  full:    " + json.dumps(a, sort_keys=True)[:2000])
                print(f"  {second}: " + json.dumps(b, sort_keys=True)[:2000])
            else:
                print(f"  finding {a['id']} at {key(a)}:")
                for k in sorted(set(a) | set(b)):
                    if a.get(k) != b.get(k):
                        print(f"    {k}: full {json.dumps(a.get(k))[:600]}  {second} {json.dumps(b.get(k))[:600]}")
            break
        return 1
    finally:
        if keep:
            shutil.copytree(work, keep, dirs_exist_ok=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
