#!/usr/bin/env python3
"""Runs a sleep-kernel test app under asyncwatch and compares the JSON report with its expectation
file (test_apps/apps/expected/<case>.json; the format is in test_apps/apps/README.md).

  check_app.py check       [--sim|--gpu] [--static] --build DIR CASE.json...
  check_app.py check       [--sim|--gpu] [--static] --from-run RUN_DIR CASE.json   (offline: a run
                           directory written by validate_on_gpu.sh apps: stdout, stderr, rc,
                           traces/, report.json)
  check_app.py same-output [--sim|--gpu] [--static] --build DIR CASE.json...
  check_app.py seed-ratio  --build DIR                (the seed's ratio test, on the simulator)
  check_app.py show        [--sim|--gpu] CASE.json    (the expectations with markers resolved)
  check_app.py probe       [--static] --build DIR CASE.json...   (call sites checked offline on the
                           binary's real return addresses; cases with "probe_sites": true)
  check_app.py results     [--build DIR] [--reanalyze] VALIDATE_DIR
                           (every run of an unpacked validate.tar.gz from the GPU machine; runs
                           `asyncwatch report` here on the traces when the GPU machine could not)

Paths come from --build (docs/contracts.md): bin/asyncwatch, lib/libasyncwatch.so,
lib/asyncwatch/sim/, test_apps/<app>[.static]; ASYNCWATCH_BIN, ASYNCWATCH_PRELOAD_LIB and
ASYNCWATCH_SIM_DIR override them. Exit status 0 when every check passed, 1 otherwise, 2 on usage
errors or missing files. Python 3 standard library only.

Temporary files: each run gets a directory from tempfile (in $TMPDIR or /tmp), removed with all in
it when the check ends, fails, times out or gets SIGTERM/SIGINT; a program that runs too long is
killed with its whole process group (children it forked included), so nothing writes there any
more. --time-budget (default 270 s, below the 300 s CTest timeout of the apps.* tests) bounds the
whole check, so CTest never has to kill it (which would leave its directory behind).
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED_DIR = os.path.join(HERE, "expected")
RATIO_CYCLES = 1_000_000_000  # seed-ratio's kernel: 505 ms simulated
CLOCK_HZ = 1.98e9  # simulator's clock; the H200's SM clock at most (aw_common.h)
MODE_KEYS = {"sim", "gpu", "gpu_static", "gpu_shared", "default"}
CATEGORICAL = ("id", "severity", "api", "driver_api", "direction", "host_memory", "cause", "kernel")


class Missing(Exception):
    """A file that the check needs does not exist (exit 2, with a clear message)."""


# ---------------------------------------------------------------------------------------------
# Expectation files
# ---------------------------------------------------------------------------------------------
class Ctx:
    def __init__(self, mode, linkage):
        self.mode = mode  # "sim" | "gpu"
        self.linkage = linkage  # "shared" | "static"

    def pick(self, v):
        """Resolves {"sim": a, "gpu": b, "gpu_static": c, "gpu_shared": d, "default": e} recursively."""
        if isinstance(v, dict):
            if v and set(v) <= MODE_KEYS:
                for key in (f"{self.mode}_{self.linkage}", self.mode, "default"):
                    if key in v:
                        return self.pick(v[key])
                return None
            return {k: self.pick(x) for k, x in v.items()}
        if isinstance(v, list):
            return [self.pick(x) for x in v]
        return v


def load_case(path, ctx):
    with open(path) as f:
        raw = json.load(f)
    case = ctx.pick(raw)
    case.setdefault("case", os.path.splitext(os.path.basename(path))[0])
    case["_path"] = path
    app = case["app"]
    if "source" not in case:
        for ext in (".cu", ".cpp"):
            if os.path.exists(os.path.join(HERE, app + ext)):
                case["source"] = app + ext
                break
    case["_markers"] = {}
    for src in set([case.get("source")] + [(m.get("call_site") or {}).get("file") for m in
                                           case.get("findings", []) + case.get("absent", []) +
                                           case.get("allowed", []) if isinstance(m, dict)]):
        if src and os.path.exists(os.path.join(HERE, src)):
            with open(os.path.join(HERE, src), encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    # a marker is a code line ending in "// @NAME" (comment-only lines do not count)
                    m = re.match(r"^\s*[^/\s].*//\s*(@[A-Z0-9_]+)\s*$", line)
                    if m:
                        key = (src, m.group(1))
                        if key in case["_markers"]:
                            raise ValueError(f"marker {m.group(1)} twice in {src}")
                        case["_markers"][key] = n
    args = case.get("sim_args") if ctx.mode == "sim" and "sim_args" in case else case.get("args", [])
    case["_args"] = [str(a) for a in args]
    cycles = case.get("sim_kernel_cycles") if ctx.mode == "sim" and "sim_kernel_cycles" in case \
        else case.get("kernel_cycles")
    case["_vars"] = dict(case.get("vars", {}))
    if cycles is not None:
        case["_vars"]["kernel"] = float(cycles) / CLOCK_HZ * 1e9  # ns
    return case


def applies(m, ctx):
    only = m.get("only")
    if only is None:
        return True
    only = only if isinstance(only, list) else [only]
    return ctx.mode in only or ctx.linkage in only or f"{ctx.mode}_{ctx.linkage}" in only


def value_expr(e, variables):
    """A bound: a number, "1e6", "kernel", "0.9*kernel" (variables in ns)."""
    if isinstance(e, (int, float)):
        return float(e)
    s = str(e).replace(" ", "")
    m = re.fullmatch(r"(?:([0-9.eE+-]+)\*)?([A-Za-z_]\w*)", s)
    if m:
        if m.group(2) not in variables:
            raise ValueError(f"unknown variable {m.group(2)!r} in bound {e!r}")
        return (float(m.group(1)) if m.group(1) else 1.0) * variables[m.group(2)]
    return float(s)


def fmt_ns(ns):
    if ns is None:
        return "None"
    ns = float(ns)
    for unit, div in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(ns) >= div:
            return f"{ns / div:.3g} {unit}"
    return f"{ns:.0f} ns"


# ---------------------------------------------------------------------------------------------
# Matching findings
# ---------------------------------------------------------------------------------------------
def resolve_line(spec, file, case):
    """Line spec -> (lo, hi) inclusive: 38, [51, 52], "@MARKER", ["@A", "@B"]."""
    def one(x):
        if isinstance(x, str) and x.startswith("@"):
            key = (file or case.get("source"), x)
            if key not in case["_markers"]:
                raise ValueError(f"marker {x} not found in {key[0]}")
            return case["_markers"][key]
        return int(x)
    if isinstance(spec, list):
        return one(spec[0]), one(spec[1])
    n = one(spec)
    return n, n


def field_ok(want, got):
    if isinstance(want, list):
        return got in want
    return got == want


def site_ok(want, got, case):
    if not want:
        return True
    if not isinstance(got, dict):
        return False
    file = want.get("file") or case.get("source")
    if file and os.path.basename(str(got.get("file") or "")) != os.path.basename(file):
        return False
    if "line" in want:
        lo, hi = resolve_line(want["line"], file, case)
        if not isinstance(got.get("line"), int) or not lo <= got["line"] <= hi:
            return False
    if "function" in want and want["function"] not in str(got.get("function") or ""):
        return False
    if "via" in want:  # "aw_nodebug_roundtrip (libaw_nodebug.so)": the library function called through
        via = got.get("via")
        if want["via"] is None:
            return via is None
        text = f"{via.get('function')} ({os.path.basename(str(via.get('module')))})" if isinstance(via, dict) else ""
        if want["via"] not in text:
            return False
    return True


def categorical_match(m, f, case):
    for k in CATEGORICAL:
        if k in m and not field_ok(m[k], f.get(k)):
            return False
    if not site_ok(m.get("call_site"), f.get("call_site"), case):
        return False
    # blocking-launch of a graph: the origin of its pageable memcpy node (a call-site matcher)
    if "graph_node_origin" in m:
        node = f.get("graph_memcpy_node") or {}
        if not node.get("origin") or not site_ok(m["graph_node_origin"], node.get("origin"), case):
            return False
    wk = m.get("waited_for_kernel")
    if wk is not None:
        names = [w.get("kernel") for w in (f.get("waited_for") or []) if isinstance(w, dict)]
        if not any(wk in str(n) for n in names):
            return False
    return True


def range_ok(spec, got):
    if spec is None:
        return True
    if isinstance(spec, list):
        lo, hi = spec
        return (lo is None or got >= lo) and (hi is None or got <= hi)
    return got == spec


def describe(m):
    parts = [f"{k}={m[k]}" for k in CATEGORICAL if k in m]
    cs = m.get("call_site")
    if cs:
        parts.append(f"at {cs.get('file', '')}:{cs.get('line', '?')}")
    return " ".join(parts) or "(any finding)"


def short(f):
    cs = f.get("call_site") or {}
    b = f.get("blocked_ns") or {}
    return (f"{f.get('id')} api={f.get('api')} driver_api={f.get('driver_api')} dir={f.get('direction')} "
            f"mem={f.get('host_memory')} cause={f.get('cause')} count={f.get('count')} "
            f"blocked total={fmt_ns(b.get('total'))} max={fmt_ns(b.get('max'))} "
            f"at {os.path.basename(str(cs.get('file')))}:{cs.get('line')} ({cs.get('function')})")


def compare_report(case, report, ctx):
    """Returns (errors, notes)."""
    errors, notes = [], []
    findings = report.get("findings") or []
    variables = case["_vars"]
    matched = set()
    for m in case.get("findings", []):
        if not applies(m, ctx):
            continue
        cands = [i for i, f in enumerate(findings) if categorical_match(m, f, case)]
        matched.update(cands)
        label = describe(m)
        problems = []
        if not cands:
            problems.append("no such finding")
        else:
            fs = [findings[i] for i in cands]
            count = sum(int(f.get("count") or 0) for f in fs)
            if not range_ok(m.get("count"), count):
                problems.append(f"count {count}, expected {m['count']}")
            if "bytes" in m:
                got_bytes = [f.get("bytes") for f in fs]
                if not any(range_ok(m["bytes"], b) for b in got_bytes if b is not None):
                    problems.append(f"bytes {got_bytes}, expected {m['bytes']}")
            if "threads" in m:  # distinct threads that made the calls (JSON `threads`)
                threads = sum(int(f.get("threads") or 0) for f in fs)
                if not range_ok(m["threads"], threads):
                    problems.append(f"{threads} threads, expected {m['threads']}")
            if "ranges" in m:  # NVTX range name -> calls inside it (exactly these names)
                got_ranges = {}
                for f in fs:
                    for r in f.get("ranges") or []:
                        got_ranges[r.get("name")] = got_ranges.get(r.get("name"), 0) + int(r.get("calls") or 0)
                if set(got_ranges) != set(m["ranges"]) or not all(
                        range_ok(spec, got_ranges[name]) for name, spec in m["ranges"].items()):
                    problems.append(f"ranges {got_ranges}, expected {m['ranges']}")
            if "impact_basis" in m:  # a substring of one finding's impact_basis (docs/findings.md, "Impact")
                if not any(m["impact_basis"] in str(f.get("impact_basis")) for f in fs):
                    problems.append(f"impact_basis {[f.get('impact_basis') for f in fs]}, expected {m['impact_basis']!r}")
            if "processes" in m:
                pids = {p.get("pid") for f in fs for p in (f.get("processes") or [])}
                if not range_ok(m["processes"], len(pids)):
                    problems.append(f"{len(pids)} processes, expected {m['processes']}")
            agg = {
                "total": sum(float((f.get("blocked_ns") or {}).get("total") or 0) for f in fs),
                "max": max(float((f.get("blocked_ns") or {}).get("max") or 0) for f in fs),
                "min": min(float((f.get("blocked_ns") or {}).get("min") or 0) for f in fs),
            }
            if len(fs) == 1:
                agg["median"] = float((fs[0].get("blocked_ns") or {}).get("median") or 0)
            for stat, bound in (m.get("blocked_ns") or {}).items():
                if stat not in agg:
                    notes.append(f"{label}: blocked_ns.{stat} not comparable over {len(fs)} findings")
                    continue
                got = agg[stat]
                if "ge" in bound and got < value_expr(bound["ge"], variables):
                    problems.append(f"blocked_ns.{stat} {fmt_ns(got)} < {bound['ge']} "
                                    f"({fmt_ns(value_expr(bound['ge'], variables))})")
                if "le" in bound and got > value_expr(bound["le"], variables):
                    problems.append(f"blocked_ns.{stat} {fmt_ns(got)} > {bound['le']} "
                                    f"({fmt_ns(value_expr(bound['le'], variables))})")
        if problems:
            msg = f"expected finding {label}: " + "; ".join(problems)
            if cands:
                msg += "".join(f"\n      got: {short(findings[i])}" for i in cands)
            # optional: absence is only noted; a finding that is there must still fit the bounds.
            if m.get("optional") and not cands:
                notes.append("optional, not present: " + msg)
            else:
                errors.append(msg)
    for m in case.get("absent", []):
        if not applies(m, ctx):
            continue
        hits = [f for f in findings if categorical_match(m, f, case)]
        if hits:
            errors.append(f"finding must be absent: {describe(m)}" +
                          "".join(f"\n      got: {short(f)}" for f in hits))
    for m in case.get("allowed", []):
        matched.update(i for i, f in enumerate(findings) if applies(m, ctx) and categorical_match(m, f, case))
    # Every finding, whatever the case: a share of one thread's wall time is at most 1, and so is the
    # impact's share of the run; an impact says what it rests on.
    for f in findings:
        if float(f.get("share_of_wall") or 0) > 1.0:
            errors.append(f"share_of_wall {f.get('share_of_wall')} > 1: {short(f)}")
        if "impact_ns" in f and not (0 <= float(f.get("impact_share") or 0) <= 1.0 and f.get("impact_basis")):
            errors.append(f"impact_share {f.get('impact_share')} (basis {f.get('impact_basis')!r}): {short(f)}")
    others = [f for i, f in enumerate(findings) if i not in matched]
    if case.get("no_other_findings"):
        ignore = set(case.get("ignore_severities", ["info"]))
        bad = [f for f in others if f.get("severity") not in ignore]
        for f in bad:
            errors.append(f"unexpected finding: {short(f)}")
        others = [f for f in others if f not in bad]
    for f in others:
        notes.append(f"other finding (not checked): {short(f)}")

    procs = report.get("processes") or []
    if "processes" in case and not range_ok(case["processes"], len(procs)):
        errors.append(f"{len(procs)} processes in the report, expected {case['processes']}")
    for p in procs:
        if p.get("records_lost"):
            errors.append(f"process {p.get('pid')}: {p.get('records_lost')} records lost")
        if case.get("closed_cleanly", True) and p.get("closed_cleanly") is False:
            errors.append(f"process {p.get('pid')}: trace not closed cleanly")
        if ctx.mode == "sim" and p.get("simulated") is False:
            errors.append(f"process {p.get('pid')}: not marked simulated on the simulator")
    if report.get("schema") not in (None, "asyncwatch-report"):
        errors.append(f"report schema {report.get('schema')!r}")
    return errors, notes


def compare_stdout(case, out, rc):
    errors = []
    want_rc = case.get("exit_code", 0)
    if rc != want_rc:
        errors.append(f"exit status {rc}, expected {want_rc}")
    spec = case.get("stdout") or {}
    for s in spec.get("contains", []):
        if s not in out:
            errors.append(f"stdout lacks {s!r}")
    for s in spec.get("not_contains", []):
        if s in out:
            errors.append(f"stdout contains {s!r}")
    for r in spec.get("regex", []):
        if not re.search(r, out, re.M):
            errors.append(f"stdout does not match /{r}/")
    if "count" in spec:
        for s, n in spec["count"].items():
            if not range_ok(n, out.count(s)):
                errors.append(f"stdout has {out.count(s)} x {s!r}, expected {n}")
    return errors


# ---------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------
class Paths:
    def __init__(self, build):
        self.build = os.path.abspath(build) if build else None
        b = self.build or ""
        self.asyncwatch = os.environ.get("ASYNCWATCH_BIN") or os.path.join(b, "bin", "asyncwatch")
        self.preload = os.environ.get("ASYNCWATCH_PRELOAD_LIB") or os.path.join(b, "lib", "libasyncwatch.so")
        self.sim_dir = os.environ.get("ASYNCWATCH_SIM_DIR") or os.path.join(b, "lib", "asyncwatch", "sim")
        self.apps = os.environ.get("ASYNCWATCH_APPS_DIR") or os.path.join(b, "test_apps")

    def app(self, case, linkage):
        name = case["app"] + (".static" if linkage == "static" and case.get("static_build", True) else "")
        return self.need(os.path.join(self.apps, name), "test app (build target " + name + ")")

    @staticmethod
    def need(path, what):
        if not os.path.exists(path):
            raise Missing(f"missing {what}: {path}")
        return path

    def need_sim(self):
        for f in ("libcuda.so.1", "libcudart.so.13"):
            self.need(os.path.join(self.sim_dir, f), "simulator library (set ASYNCWATCH_SIM_DIR)")

    def tool_env(self, extra=None):
        env = dict(os.environ)
        env["ASYNCWATCH_PRELOAD_LIB"] = self.preload
        env["ASYNCWATCH_SIM_DIR"] = self.sim_dir
        env.update(extra or {})
        return env


DEADLINE = None  # time.monotonic() by which the whole check ends (--time-budget)


def run(cmd, env, timeout, cwd=None):
    """Runs cmd in a process group of its own; at its timeout (or the check's deadline, whichever
    comes first) the whole group is killed, so no child it forked goes on writing."""
    if DEADLINE is not None:
        left = DEADLINE - time.monotonic()
        if left < timeout:
            timeout = max(1.0, left)
    try:
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                             start_new_session=True)
    except OSError as e:
        return 127, "", f"[check_app] cannot run {cmd[0]}: {e}\n"
    try:
        out, err = p.communicate(timeout=timeout)
        # Killed by signal N: report 128 + N, as a shell and `asyncwatch run` do (Python gives -N).
        rc = p.returncode if p.returncode >= 0 else 128 - p.returncode
        extra = ""
    except subprocess.TimeoutExpired:
        kill_group(p)
        out, err = p.communicate()
        rc = 124
        extra = f"\n[check_app] timed out after {timeout:.0f} s: {' '.join(cmd)}\n"
    except BaseException:  # SIGTERM/SIGINT while it runs: take the group down, then clean up
        kill_group(p)
        p.wait()
        raise
    kill_group(p)  # children it left running (a fork that outlived its parent)
    return rc, out.decode(errors="replace"), err.decode(errors="replace") + extra


def kill_group(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class Scratch:
    """A temporary directory (tempfile: $TMPDIR or /tmp) removed with everything in it on exit."""

    def __init__(self, prefix):
        self.prefix = prefix
        self.path = None

    def __enter__(self):
        self.path = tempfile.mkdtemp(prefix=self.prefix)
        return self.path

    def __exit__(self, *exc):
        remove_tree(self.path)
        return False


def remove_tree(path):
    # A few tries: a process being killed may still be closing a file in it.
    for _ in range(50):
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.lexists(path):
            return
        time.sleep(0.1)
    shutil.rmtree(path)  # the last try says why


def report_json(paths, trace_dir, env, case):
    """asyncwatch report --format json DIR -> dict (or None with an error string)."""
    traces = [f for f in os.listdir(trace_dir) if f.endswith(".awtrace")] if os.path.isdir(trace_dir) else []
    if not traces and case.get("allow_no_trace"):
        return {"schema": "asyncwatch-report", "processes": [], "findings": []}, None
    rc, out, err = run([paths.asyncwatch, "report", "--format", "json", trace_dir], env, 120)
    if rc != 0:
        return None, f"asyncwatch report exited {rc}:\n{err[-3000:]}"
    try:
        return json.loads(out), None
    except ValueError as e:
        return None, f"asyncwatch report printed no valid JSON ({e}):\n{out[:2000]}"


def print_result(title, errors, notes, verbose, extra=""):
    status = "PASS" if not errors else "FAIL"
    print(f"[{status}] {title}")
    for e in errors:
        print("  - " + e.replace("\n", "\n  "))
    if verbose or errors:
        for n in notes:
            print("  . " + n.replace("\n", "\n  "))
    if errors and extra:
        print(extra)


def cmd_check(opts, case_path, ctx, paths):
    case = load_case(case_path, ctx)
    title = f"{case['case']} ({ctx.mode}, {ctx.linkage})"
    if opts.from_run:
        rd = opts.from_run
        out = open(os.path.join(rd, "stdout"), errors="replace").read() if os.path.exists(os.path.join(rd, "stdout")) else ""
        rc = int(open(os.path.join(rd, "rc")).read().strip() or -1)
        if os.path.exists(os.path.join(rd, "report.json")) and not opts.reanalyze:
            with open(os.path.join(rd, "report.json")) as f:
                report, rerr = json.load(f), None
        else:
            paths.need(paths.asyncwatch, "asyncwatch command")
            report, rerr = report_json(paths, os.path.join(rd, "traces"), paths.tool_env(), case)
        err_text = ""
    else:
        app = paths.app(case, ctx.linkage)
        paths.need(paths.asyncwatch, "asyncwatch command (build target of analyzer/)")
        paths.need(paths.preload, "preload library libasyncwatch.so")
        if ctx.mode == "sim":
            paths.need_sim()
        with Scratch(f"aw-{case['case']}-") as tmp:
            env = paths.tool_env(case.get("env"))
            if opts.via == "preload":  # the library alone, as on a machine where the command cannot run
                env.update(LD_PRELOAD=paths.preload, ASYNCWATCH_OUTPUT_DIR=tmp)
                if ctx.mode == "sim":
                    env["LD_LIBRARY_PATH"] = paths.sim_dir + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
                cmd = [app] + case["_args"]
            else:
                cmd = [paths.asyncwatch, "run"] + (["--sim"] if ctx.mode == "sim" else []) + \
                      ["-o", tmp, "--", app] + case["_args"]
            rc, out, err_text = run(cmd, env, case.get("timeout_s", 240), cwd=tmp)
            report, rerr = report_json(paths, tmp, env, case)
            if opts.keep:
                dst = os.path.join(opts.keep, f"{case['case']}.{ctx.mode}.{ctx.linkage}")
                shutil.rmtree(dst, ignore_errors=True)
                shutil.copytree(tmp, dst)
                with open(os.path.join(dst, "stdout"), "w") as f:
                    f.write(out)
                with open(os.path.join(dst, "stderr"), "w") as f:
                    f.write(err_text)
                if report is not None:
                    with open(os.path.join(dst, "report.json"), "w") as f:
                        json.dump(report, f, indent=1)
    errors = compare_stdout(case, out, rc)
    notes = []
    if report is None:
        errors.append(rerr)
    else:
        e, notes = compare_report(case, report, ctx)
        errors += e
    extra = ""
    if errors:
        extra = "  --- program stdout (tail) ---\n" + "\n".join("  | " + l for l in out[-2500:].splitlines()) + \
                "\n  --- stderr (tail) ---\n" + "\n".join("  | " + l for l in err_text[-2500:].splitlines())
        if report is not None:
            extra += "\n  --- all findings ---\n" + "\n".join("  * " + short(f) for f in report.get("findings") or [])
    print_result(title, errors, notes, opts.verbose, extra)
    return not errors


def normalise(text, masks):
    for r in masks:
        text = re.sub(r, "<masked>", text, flags=re.M)
    return text


def cmd_same_output(opts, case_path, ctx, paths):
    """The app's stdout and exit status are the same bare, under LD_PRELOAD=libasyncwatch.so and
    under `asyncwatch run` (whose own output may surround the program's)."""
    case = load_case(case_path, ctx)
    title = f"same-output {case['case']} ({ctx.mode}, {ctx.linkage})"
    app = paths.app(case, ctx.linkage)
    paths.need(paths.preload, "preload library libasyncwatch.so")
    paths.need(paths.asyncwatch, "asyncwatch command")
    base_env = dict(os.environ)
    base_env.update(case.get("env") or {})
    if ctx.mode == "sim":
        paths.need_sim()
        base_env["LD_LIBRARY_PATH"] = paths.sim_dir + (":" + base_env["LD_LIBRARY_PATH"] if base_env.get("LD_LIBRARY_PATH") else "")
    masks = case.get("stdout_mask", [])
    timeout = case.get("timeout_s", 240)
    errors = []
    with Scratch(f"aw-same-{case['case']}-") as tmp:
        rc0, out0, err0 = run([app] + case["_args"], base_env, timeout, cwd=tmp)
        env1 = dict(base_env, LD_PRELOAD=paths.preload, ASYNCWATCH_OUTPUT_DIR=os.path.join(tmp, "preload"))
        os.makedirs(env1["ASYNCWATCH_OUTPUT_DIR"])
        rc1, out1, err1 = run([app] + case["_args"], env1, timeout, cwd=tmp)
        env2 = paths.tool_env(case.get("env"))
        rc2, out2, err2 = run([paths.asyncwatch, "run"] + (["--sim"] if ctx.mode == "sim" else []) +
                              ["-o", os.path.join(tmp, "run"), "--", app] + case["_args"], env2, timeout, cwd=tmp)
    n0, n1, n2 = (normalise(o, masks) for o in (out0, out1, out2))
    if rc0 != case.get("exit_code", 0):
        errors.append(f"bare run exited {rc0}, expected {case.get('exit_code', 0)}\n{err0[-2000:]}")
    if rc1 != rc0:
        errors.append(f"under LD_PRELOAD exited {rc1}, bare {rc0}\n{err1[-2000:]}")
    if n1 != n0:
        errors.append("stdout under LD_PRELOAD differs from bare:\n" + udiff(n0, n1))
    if rc2 != rc0:
        errors.append(f"under asyncwatch run exited {rc2}, bare {rc0}\n{err2[-2000:]}")
    if n0 not in n2:
        errors.append("bare stdout is not contained in the stdout of asyncwatch run:\n" + udiff(n0, n2))
    print_result(title, errors, [], opts.verbose)
    return not errors


def udiff(a, b):
    import difflib
    return "".join(difflib.unified_diff(a.splitlines(True), b.splitlines(True), "bare", "with asyncwatch"))[:4000]


# ---------------------------------------------------------------------------------------------
# The seed's ratio test, on the simulator without asyncwatch
# ---------------------------------------------------------------------------------------------
def parse_floats(out, label):
    return [float(m.group(1)) for m in re.finditer(rf"^{re.escape(label)}\s*([-0-9.eE+]+)\s*$", out, re.M)]


def cmd_seed_ratio(opts, paths):
    """seed_ratio (the seed answer's program with size and kernel length as arguments) bare on the
    simulator, with a 1e9-cycle (505 ms) kernel: the seed's 1e6 cycles (0.5 ms) make 1% = 5 us, the
    cost of a single API call, and even at 101 ms a 1 ms limit is within one scheduler time slice of
    a loaded 2-core CI machine (seen here: pinned 128 MiB H2D at 1-8 ms while others compiled):
      pageable D2H wall time >= 0.9 x kernel time; pageable H2D grows with size (128 MiB > 2 x 8 MiB);
      pinned H2D and D2H <= 1% of the kernel time.
    Then the verbatim seed_answer (2 GiB) pageable and pinned: exit 0, its two Elapsed: lines, the
    callback lines, and pinned Elapsed (process CPU time, as the seed measures) <= 10 ms.
    Timing checks take the best of up to 3 runs (noise on a loaded CI machine only adds time)."""
    paths.need_sim()
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = paths.sim_dir + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    ratio_app = paths.need(os.path.join(paths.apps, "seed_ratio"), "test app seed_ratio")
    seed_app = paths.need(os.path.join(paths.apps, "seed_answer"), "test app seed_answer")
    errors, lines = [], []

    def measure(mode, size):
        rc, out, err = run([ratio_app, mode, str(size), str(RATIO_CYCLES)], env, 120)
        if rc != 0:
            errors.append(f"seed_ratio {mode} {size} exited {rc}:\n{err[-2000:]}")
            return None
        vals = {k: parse_floats(out, k + ":") for k in ("Wall H2D", "Wall D2H", "Kernel", "Elapsed")}
        if any(len(vals[k]) != n for k, n in (("Wall H2D", 1), ("Wall D2H", 1), ("Kernel", 1), ("Elapsed", 2))):
            errors.append(f"seed_ratio {mode} {size}: unexpected output:\n{out}")
            return None
        for s in ("Right after we finished enqueuing work, the stream has ",
                  "After cudaStreamSynchronize, the stream has concluded execution."):
            if s not in out:
                errors.append(f"seed_ratio {mode} {size}: stdout lacks {s!r}")
        return {k: v[0] for k, v in vals.items()}

    def best(mode, size, key, cond):
        got = []
        for _ in range(3):
            r = measure(mode, size)
            if r is None:
                return None
            got.append(r)
            if cond(r):
                break
        return min(got, key=lambda r: r[key])

    small, big = 8 << 20, 128 << 20
    d2h = best("pageable", big, "Wall D2H", lambda r: r["Wall D2H"] >= 0.9 * r["Kernel"])
    h2d_small = best("pageable", small, "Wall H2D", lambda r: True)
    h2d_big = best("pageable", big, "Wall H2D", lambda r: h2d_small is None or r["Wall H2D"] > 2 * h2d_small["Wall H2D"])
    pinned = best("pinned", big, "Wall D2H", lambda r: max(r["Wall H2D"], r["Wall D2H"]) <= 0.01 * r["Kernel"])
    pinned_h2d = pinned
    if pinned is not None and pinned["Wall H2D"] > 0.01 * pinned["Kernel"]:
        pinned_h2d = best("pinned", big, "Wall H2D", lambda r: r["Wall H2D"] <= 0.01 * r["Kernel"])
    if None not in (d2h, h2d_small, h2d_big, pinned, pinned_h2d):
        k = d2h["Kernel"]
        lines.append(f"kernel (simulated) {k * 1e3:.1f} ms")
        lines.append(f"pageable D2H 128 MiB: {d2h['Wall D2H'] * 1e3:.2f} ms = {d2h['Wall D2H'] / k:.3f} x kernel (>= 0.9)")
        lines.append(f"pageable H2D 8 MiB: {h2d_small['Wall H2D'] * 1e3:.3f} ms, 128 MiB: {h2d_big['Wall H2D'] * 1e3:.3f} ms (grows: > 2x)")
        lines.append(f"pinned H2D: {pinned_h2d['Wall H2D'] * 1e6:.1f} us = {pinned_h2d['Wall H2D'] / k * 100:.3f} % of kernel (<= 1 %)")
        lines.append(f"pinned D2H: {pinned['Wall D2H'] * 1e6:.1f} us = {pinned['Wall D2H'] / k * 100:.3f} % of kernel (<= 1 %)")
        if d2h["Wall D2H"] < 0.9 * k:
            errors.append("pageable D2H returned before 0.9 x the kernel's simulated time")
        if not h2d_big["Wall H2D"] > 2 * h2d_small["Wall H2D"]:
            errors.append("pageable H2D time does not grow with size (128 MiB not > 2 x 8 MiB)")
        if pinned_h2d["Wall H2D"] > 0.01 * k:
            errors.append("pinned H2D took more than 1% of the kernel time")
        if pinned["Wall D2H"] > 0.01 * k:
            errors.append("pinned D2H took more than 1% of the kernel time")

    for mode_args, name in (([], "pageable (no argument: malloc)"), (["1"], "pinned (argument: cudaMallocHost)")):
        rc, out, err = run([seed_app] + mode_args, env, 240)
        el = parse_floats(out, "Elapsed:")
        lines.append(f"seed_answer {name}: exit {rc}, Elapsed (CPU s): {el}")
        if rc != 0 or len(el) != 2:
            errors.append(f"seed_answer {name}: exit {rc}, {len(el)} Elapsed lines\n{out}\n{err[-2000:]}")
            continue
        if "After cudaStreamSynchronize, the stream has concluded execution." not in out:
            errors.append(f"seed_answer {name}: the callback did not run by cudaStreamSynchronize")
        if mode_args and "Right after we finished enqueuing work, the stream has not concluded execution." not in out:
            errors.append(f"seed_answer {name}: stream concluded right after enqueuing (pinned copies should not block)")
        if mode_args and max(el) > 0.01:
            errors.append(f"seed_answer {name}: a pinned copy took {max(el)} s of CPU time")
    print_result("seed-ratio (simulator, no asyncwatch)", errors, lines, True)
    return not errors


def check_python_run(root, r, paths, opts):
    """The PyTorch / CuPy scripts of validate.py: traces in python/<name>.traces, expectations in
    test_apps/gpu/expected/<name>.json (no call sites)."""
    name = r["case"][:-3] if r["case"].endswith(".py") else r["case"]
    exp = os.path.join(os.path.dirname(HERE), "gpu", "expected", name + ".json")
    tdir = os.path.join(root, "python", name + ".traces")
    ctx = Ctx("gpu", "shared")
    case = load_case(exp, ctx)
    errors, notes = [], []
    if r.get("status") != "RAN" or r.get("bare_rc") or r.get("aw_rc"):
        errors.append(f"script status {r.get('status')}, exit {r.get('bare_rc')} bare / {r.get('aw_rc')} under LD_PRELOAD")
    report, rerr = report_json(paths, tdir, paths.tool_env(), case) if os.path.isdir(tdir) else (None, f"no {tdir}")
    if report is None:
        errors.append(rerr)
    else:
        e, notes = compare_report(case, report, ctx)
        errors += e
    print_result(f"{name} (gpu, python)", errors, notes, opts.verbose)
    return not errors


def probe_match(m, f, case):
    """A matcher against a probe finding: call site and API only (the probe's calls are synthetic:
    every copy is a pageable host-to-device one, every launch a first launch, every call of a
    library function a launch)."""
    site = m.get("call_site") or {}
    # what a library does inside is not known to the probe: its calls are probed as launches
    if "api" in m and not site.get("via") and not field_ok(m["api"], f.get("api")):
        return False
    if "id" in m and m["id"] == "blocking-memset" and f.get("id") != "blocking-memset":
        return False
    return site_ok(m.get("call_site"), f.get("call_site"), case)


def cmd_probe(opts, case_path, ctx, paths):
    """The call sites of a build that cannot run here (static runtime), checked offline: every call
    instruction that launches, copies or sets memory becomes a synthetic traced call with its real
    return address (test_apps/corpus/probe_sites.py), and `asyncwatch report --min-blocked-us 0` must
    put each at a line the expectation file names (findings and allowed, by call_site and api)."""
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "corpus"))
    import probe_sites  # noqa: E402 (the probe lives with the corpus tools)
    case = load_case(case_path, ctx)
    title = f"probe {case['case']} ({ctx.linkage})"
    binary = paths.app(case, ctx.linkage)
    tool = os.environ.get("ASYNCWATCH_PROBE_TRACE") or os.path.join(paths.build or "", "bin", "asyncwatch_probe_trace")
    paths.need(tool, "probe trace writer (build target asyncwatch_probe_trace)")
    matchers = [m for m in case.get("findings", []) + case.get("allowed", []) if applies(m, ctx)]
    via = sorted({m["call_site"]["via"].split(" (")[0] for m in matchers
                  if isinstance(m.get("call_site"), dict) and m["call_site"].get("via")})
    tmp = tempfile.mkdtemp(prefix="aw-probe-")
    try:
        trace = probe_sites.make_probe_trace(binary, tmp, tool, [paths.apps], via)
        rc, out, err = run([paths.asyncwatch, "report", "--format", "json", "--min-blocked-us", "0", trace],
                           paths.tool_env(), 120)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    errors = []
    if rc != 0:
        errors.append(f"asyncwatch report exited {rc}: {err[-2000:]}")
        print_result(title, errors, [], opts.verbose)
        return False
    findings = json.loads(out).get("findings") or []
    for m in case.get("findings", []):
        if applies(m, ctx) and "call_site" in m and not any(probe_match(m, f, case) for f in findings):
            errors.append(f"expected a probed call at {describe(m)}: none")
    for m in case.get("absent", []):
        for f in findings:
            if applies(m, ctx) and probe_match(m, f, case):
                errors.append(f"must be absent: {describe(m)}\n      got: {short(f)}")
    for f in findings:
        if not any(probe_match(m, f, case) for m in matchers if "call_site" in m):
            errors.append(f"probed call reported at a line no expectation names: {short(f)}")
    print_result(title, errors, [short(f) for f in findings], opts.verbose)
    return not errors


def cmd_results(opts, paths):
    """Checks every run recorded in VALIDATE_DIR/manifest.json (test_apps/gpu/validate.py)."""
    if len(opts.cases) != 1:
        raise Missing("results takes one directory: the unpacked validate/ folder")
    root = opts.cases[0]
    if os.path.isdir(os.path.join(root, "validate")):
        root = os.path.join(root, "validate")
    with open(paths.need(os.path.join(root, "manifest.json"), "manifest of a validate run")) as f:
        manifest = json.load(f)
    print("\n".join(manifest.get("info", [])))
    ok, table = True, []
    for r in manifest["runs"]:
        if r.get("linkage") == "python":
            good = check_python_run(root, r, paths, opts)
            ok = ok and good
            table.append(f"{r['case']:32} {'python':8} {'PASS' if good else 'FAIL':8} {r.get('app_times', '')[:120]}")
            continue
        if "dir" not in r or r.get("status") in ("MISSING", "SKIPPED"):
            table.append(f"{r['case']:32} {r.get('linkage', ''):8} {r.get('status', '?'):8} {r.get('key') or r.get('why') or ''}")
            continue
        ctx = Ctx("gpu", r["linkage"])
        opts.from_run = os.path.join(root, r["dir"])
        good = cmd_check(opts, os.path.join(EXPECTED_DIR, r["case"] + ".json"), ctx, paths)
        ok = ok and good
        table.append(f"{r['case']:32} {r['linkage']:8} {'PASS' if good else 'FAIL':8} {r.get('app_times', '')[:120]}")
    print("\n".join(table))
    return ok


# ---------------------------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["check", "same-output", "seed-ratio", "show", "results", "probe"])
    ap.add_argument("cases", nargs="*", help="expectation files (or case names in expected/)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--sim", action="store_const", dest="mode", const="sim", help="simulator (default)")
    g.add_argument("--gpu", action="store_const", dest="mode", const="gpu", help="real GPU: no --sim")
    ap.add_argument("--static", action="store_true", help="the .static build (nvcc's default runtime)")
    ap.add_argument("--build", help="build directory (bin/, lib/, test_apps/)")
    ap.add_argument("--from-run", help="offline: compare a run directory of validate_on_gpu.sh apps")
    ap.add_argument("--reanalyze", action="store_true", help="with --from-run: ignore report.json, analyze traces/ here")
    ap.add_argument("--keep", help="copy traces, stdout, stderr and report.json of each run here")
    ap.add_argument("--via", choices=["run", "preload"], default=os.environ.get("ASYNCWATCH_CHECK_VIA", "run"),
                    help="check: `asyncwatch run` (default) or LD_PRELOAD=libasyncwatch.so + `asyncwatch report`")
    ap.add_argument("--time-budget", type=float, default=270,
                    help="seconds the whole check may take (programs are killed at its end; 0: no limit)")
    ap.add_argument("-v", "--verbose", action="store_true")
    opts = ap.parse_intermixed_args()
    global DEADLINE
    if opts.time_budget > 0:
        DEADLINE = time.monotonic() + opts.time_budget
    # SIGTERM (CTest, a CI runner) unwinds like ^C: the temporary directories are removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ctx = Ctx(opts.mode or "sim", "static" if opts.static else "shared")
    paths = Paths(opts.build)
    cases = []
    for c in opts.cases:
        cases.append(c if os.path.exists(c) else os.path.join(EXPECTED_DIR, c + ".json"))
    try:
        if opts.command == "seed-ratio":
            return 0 if cmd_seed_ratio(opts, paths) else 1
        if opts.command == "results":
            return 0 if cmd_results(opts, paths) else 1
        if not cases:
            ap.error("no expectation files given")
        if opts.keep:
            os.makedirs(opts.keep, exist_ok=True)
        ok = True
        for c in cases:
            if opts.command == "show":
                case = load_case(c, ctx)
                print(json.dumps({k: v for k, v in case.items() if k != "_markers"}, indent=1, default=str))
                for m in case.get("findings", []) + case.get("absent", []):
                    if isinstance(m.get("call_site"), dict) and "line" in m["call_site"]:
                        print(describe(m), "->", resolve_line(m["call_site"]["line"], m["call_site"].get("file"), case))
                continue
            fn = {"check": cmd_check, "probe": cmd_probe}.get(opts.command, cmd_same_output)
            ok = fn(opts, c, ctx, paths) and ok
        return 0 if ok else 1
    except Missing as e:
        print(f"[FAIL] {e}", file=sys.stderr)
        print(f"[FAIL] {e}")
        return 2
    except (ValueError, KeyError) as e:
        print(f"[FAIL] bad expectation file: {e}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
