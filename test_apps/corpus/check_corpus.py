#!/usr/bin/env python3
"""Checks asyncwatch's call sites on the corpus of public CUDA programs (test_apps/corpus/README.md):
every copy, launch and memset finding must be at the line of its statement (a multi-line
statement: its first line), distinct statements distinct findings, library calls "via" the
library function called.

  check_corpus.py probe   --bin-dir DIR --build BUILD [--markdown] [PROGRAM...]
      offline, here: the binaries' real call instructions made into synthetic traced calls
      (probe_sites.py), reported with --min-blocked-us 0 --inline-htod-bytes 0; every expected
      site the probe can see must be reported, nothing elsewhere.
  check_corpus.py results --results DIR --bin-dir DIR --build BUILD [--markdown] [--h200-table]
                          [PROGRAM...]
      the traces of test_apps/gpu/validate_on_gpu.sh corpus (unpacked corpus-results.tar.gz), analysed here;
      the modules are read from --bin-dir through --path-map (the binaries' directory on the GPU
      machine is in DIR/info.txt). Twice: with the default thresholds (what a user sees: every finding
      at an expected site) and with --min-blocked-us 0 --inline-htod-bytes 0 (every required site).
      --h200-table then prints each program and build's two H200 cells (sites reported, verdict)
      as markdown rows on standard output.

  check_corpus.py pyresults --results DIR [--build BUILD] [--markdown] [PROGRAM...]
      the public Python programs (expectation files with "language": "python"), from the results
      of `run_corpus.py --python` (unpacked pycorpus-results.tar.gz): each program's reports made
      on the GPU machine (report.default.json, report.all.json, report.nosym.json), or, where one
      is missing, made here from its traces with --build. Three checks per program: the default
      thresholds, every call flagged, and the default report again made without reading any
      module's symbols (ASYNCWATCH_NO_SYMBOLS=1), whose ids, severities and lines must be the same.

Expectation files: test_apps/corpus/expected/<program>.json, one site per statement:
  {"file", "line", "kind": launch|graph|copy|memset|lib, "ids": [finding ids allowed there],
   "required": the GPU run must report it, "what", "via": library function (lib sites),
   "captured": recorded inside stream capture (must never be reported on the GPU),
   "run": false (not executed with the program's arguments),
   "causes": [the finding's cause must be one of these on the GPU (JSON `cause`); absent: any]}.
Findings of other ids (explicit-sync, implicit-sync, callbacks) are not checked. Python programs
("language": "python"; test_apps/corpus/README.md, "Python programs") check every finding id, with
"line" or "lines": [first, last] (a range), "alt": [other locations of the same site], "need":
[the ids that make a required site reported], "required_default": reported at the default thresholds
too, "severity": {id: the severity at default thresholds}, and "forbid": [{"id"}] for the program.
Exit 0 when every
row passes, 1 otherwise, 2 on usage errors. Python 3 standard library; binutils for `probe`.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED = os.path.join(HERE, "expected")
VARIANTS = ["O0.static", "O0.shared", "O2.static", "O2.shared"]
CHECKED_IDS = {"blocking-launch", "pageable-async-copy", "host-to-host-async-copy", "managed-memory-copy",
               "blocking-memset"}
ALL_SITES = ["--min-blocked-us", "0", "--inline-htod-bytes", "0"]
LIB_DIRS = ["/usr/local/cuda/lib64"]


def load(programs, language="cuda"):
    out = []
    for path in sorted(glob.glob(os.path.join(EXPECTED, "*.json"))):
        with open(path) as f:
            e = json.load(f)
        if e.get("language", "cuda") == language and (not programs or e["program"] in programs):
            out.append(e)
    missing = set(programs) - {e["program"] for e in out}
    if missing:
        raise SystemExit(f"check_corpus: no expectation file for {', '.join(sorted(missing))}")
    return out


def report(asyncwatch, traces, extra, env=None):
    cmd = [asyncwatch, "report", "--format", "json"] + extra + traces
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=env)
    if p.returncode not in (0, 1):
        return None, f"asyncwatch report exited {p.returncode}: {p.stderr.strip()[-1500:]}"
    try:
        return json.loads(p.stdout), None
    except ValueError as e:
        return None, f"no JSON from asyncwatch report: {e}"


def where(f):
    cs = f.get("call_site") or {}
    if cs.get("file"):
        return f"{os.path.basename(cs['file'])}:{cs.get('line')}"
    mod = os.path.basename(cs.get("module") or "?")
    return f"{cs.get('function') or ''} ({mod}+{cs.get('offset')})" if cs else "(no call site)"


def via_ok(want, cs):
    """The finding went through library function `want`: by name, or, where the library could not
    be read for symbols here (another build of it on the GPU machine), through some library frame."""
    via = cs.get("via") if isinstance(cs, dict) else None
    if not via:
        return False
    fn = via.get("function")
    return fn == want if fn else bool(via.get("module"))


def evaluate(exp, findings, mode, strict_required):
    """-> (errors, reported site keys). mode: probe | gpu."""
    errors = []
    sites = {(s["file"], s["line"]): s for s in exp["sites"]}
    seen = {}
    for f in findings:
        if f.get("id") not in CHECKED_IDS:
            continue
        cs = f.get("call_site") or {}
        key = (os.path.basename(cs.get("file") or ""), cs.get("line"))
        s = sites.get(key)
        if s is None:
            errors.append(f"{f.get('id')} ({f.get('api')}, {f.get('count')} calls) at {where(f)}: no expected statement there")
            continue
        seen.setdefault(key, []).append(f)
        if mode == "gpu" and f.get("id") not in s["ids"]:
            errors.append(f"{f.get('id')} at {key[0]}:{key[1]}: expected one of {', '.join(s['ids'])} there")
        if mode == "gpu" and s.get("causes") and f.get("cause") not in s["causes"]:
            errors.append(f"{f.get('id')} at {key[0]}:{key[1]}: cause {f.get('cause')}, expected one of "
                          f"{', '.join(s['causes'])}")
        if mode == "gpu" and s.get("captured"):
            errors.append(f"{f.get('id')} at {key[0]}:{key[1]}: the call was captured into a graph, never executed")
        if s.get("via") and not via_ok(s["via"], cs):
            errors.append(f"{f.get('id')} at {key[0]}:{key[1]}: expected via {s['via']}, got "
                          f"{(cs.get('via') or {}).get('function') if isinstance(cs.get('via'), dict) else None}")
        if not cs.get("user_code", True):
            errors.append(f"{f.get('id')} at {key[0]}:{key[1]}: not marked as the program's own code")
    if strict_required:
        for key, s in sites.items():
            need = (s.get("probe", True) if mode == "probe" else
                    s["required"] and s.get("run", True) and not s.get("captured"))
            if need and key not in seen:
                errors.append(f"missing: {key[0]}:{key[1]} ({s['what']})")
    return errors, seen


def row(exp, build, seen, errors, markdown):
    listed = len(exp["sites"])
    req = sum(1 for s in exp["sites"] if s["required"] and s.get("run", True) and not s.get("captured"))
    reported = ", ".join(f"{k[0]}:{k[1]}" for k in sorted(seen, key=lambda k: (k[0], k[1] or 0)))
    verdict = "pass" if not errors else "FAIL"
    if markdown:
        return f"| {exp['program']} | {build} | {listed} ({req} required) | {len(seen)}: {reported} | {verdict} |"
    return f"{exp['program']:24} {build:10} {listed:3} ({req:2} req) {len(seen):3} reported  {verdict}"


def cmd_probe(opts, exps):
    sys.path.insert(0, HERE)
    import probe_sites  # noqa: E402
    tool = os.path.join(opts.build, "bin", "asyncwatch_probe_trace")
    asyncwatch = os.path.join(opts.build, "bin", "asyncwatch")
    for p in (tool, asyncwatch):
        if not os.path.exists(p):
            raise SystemExit(f"check_corpus: missing {p} (build targets asyncwatch and asyncwatch_probe_trace)")
    ok, rows = True, []
    tmp = tempfile.mkdtemp(prefix="aw-corpus-probe-")
    try:
        for exp in exps:
            via = sorted({s["via"] for s in exp["sites"] if s.get("via")})
            for v in VARIANTS:
                binary = os.path.join(opts.bin_dir, f"{exp['program']}.{v}")
                if not os.path.exists(binary):
                    rows.append(row(exp, v, {}, ["binary missing"], opts.markdown))
                    rows.append(f"    - binary missing: {binary}")
                    ok = False
                    continue
                trace = probe_sites.make_probe_trace(binary, tmp, tool, LIB_DIRS, via)
                rep, err = report(asyncwatch, [trace], ALL_SITES)
                errors, seen = (evaluate(exp, rep.get("findings") or [], "probe", True) if rep else ([err], {}))
                rows.append(row(exp, v, seen, errors, opts.markdown))
                if errors:
                    ok = False
                    for e in errors:
                        rows.append(f"    - {e}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("\n".join(rows))
    return ok


def read_info(results):
    info = {}
    path = os.path.join(results, "info.txt")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if "=" in line:
                    k, v = line.rstrip("\n").split("=", 1)
                    info[k] = v
    return info


def cmd_results(opts, exps):
    asyncwatch = os.path.join(opts.build, "bin", "asyncwatch")
    if not os.path.exists(asyncwatch):
        raise SystemExit(f"check_corpus: missing {asyncwatch}")
    root = opts.results
    if os.path.isdir(os.path.join(root, "corpus-results")):
        root = os.path.join(root, "corpus-results")
    info = read_info(root)
    mapping = []
    if info.get("bin_dir"):
        mapping = ["--path-map", f"{info['bin_dir']}={os.path.abspath(opts.bin_dir)}"]
    ok, rows, cells = True, [], {}
    for exp in exps:
        for v in VARIANTS:
            run_dir = os.path.join(root, "runs", f"{exp['program']}.{v}")
            cells[(exp["program"], v)] = ("not run", "FAIL")
            errors = []
            if not os.path.isdir(run_dir):
                rows.append(row(exp, v, {}, ["not run"], opts.markdown))
                rows.append("    - not run (no runs/%s.%s in the results)" % (exp["program"], v))
                ok = False
                continue
            with open(os.path.join(run_dir, "rc")) as f:
                rc = f.read().strip()
            bare = os.path.join(run_dir, "bare.rc")
            if rc != "0":
                errors.append(f"the program exited {rc} under asyncwatch")
            if os.path.exists(bare):
                with open(bare) as f:
                    if f.read().strip() != rc:
                        errors.append("exit status differs from the bare run")
            traces = sorted(glob.glob(os.path.join(run_dir, "traces", "*.awtrace")))
            seen = {}
            if not traces:
                errors.append("no trace")
            else:
                for extra, strict in (([], False), (ALL_SITES, True)):
                    rep, err = report(asyncwatch, traces, mapping + extra)
                    if rep is None:
                        errors.append(err)
                        continue
                    e, s = evaluate(exp, rep.get("findings") or [], "gpu", strict)
                    errors += [("" if strict else "(default thresholds) ") + x for x in e]
                    if strict:
                        seen = s
            rows.append(row(exp, v, seen, errors, opts.markdown))
            cells[(exp["program"], v)] = gpu_cells(exp, seen, errors)
            if errors:
                ok = False
                for e in errors:
                    rows.append(f"    - {e}")
    print("\n".join(rows))
    if opts.h200_table:
        print(h200_table(cells, info))
    return ok


def gpu_cells(exp, seen, errors):
    """The two H200 cells of a program and build: sites reported, verdict."""
    req = [(s["file"], s["line"]) for s in exp["sites"] if s["required"] and s.get("run", True) and not s.get("captured")]
    got = sum(1 for k in req if k in seen)
    return (f"{len(seen)} sites, {got} of {len(req)} required",
            "pass" if not errors else f"FAIL ({len(errors)} error{'' if len(errors) == 1 else 's'})")


def h200_table(cells, info):
    """The H200 results as markdown rows, one per program and build, for a doc page's table."""
    lines = [f"<!-- check_corpus results: run of {info.get('date', '?')}, {info.get('gpu', '?')} -->",
             "| program | build | H200 sites reported | H200 verdict |", "|---|---|---|---|"]
    lines += [f"| {p} | {b} | {c[0]} | {c[1]} |" for (p, b), c in sorted(cells.items())]
    return "\n".join(lines)


# --- Python programs -------------------------------------------------------------------------------
PY_REPORTS = {"default": [], "all": ALL_SITES}  # report.<name>.json: the thresholds each is made with
PHASE_MARK = "(made inside "  # docs/findings.md "Framework phases": the message says the phase
# A framework's own threads wait for their own work, and may still be in a call when the process ends
# (XLA's, PyTorch's at shutdown), with no frame of the user's code to show: such explicit waits and
# in-flight calls are reported without a user line, as docs/findings.md says, and are no error here.
PY_WITHOUT_USER_LINE = {"explicit-sync", "in-flight-call"}


def py_locations(site):
    """(file, first, last) of a site and of its alternative locations."""
    out = []
    for loc in [site] + list(site.get("alt", [])):
        first, last = loc["lines"] if "lines" in loc else (loc["line"], loc["line"])
        out.append((loc.get("file", site["file"]), first, last))
    return out


def py_site_of(exp, file, line):
    """The index of the first site of exp whose location holds file:line, or None."""
    if line is None:
        return None
    for i, s in enumerate(exp["sites"]):
        for f, first, last in py_locations(s):
            if f == file and first <= line <= last:
                return i
    return None


def py_where(s):
    return ", ".join(f"{f}:{a}" + (f"-{b}" if b != a else "") for f, a, b in py_locations(s))


def evaluate_py(exp, findings, mode):
    """-> (errors, {site index: ids seen}). mode: default (a user's report) | all (every call flagged).
    Every finding must be at an expected site with an allowed id; required sites must be there."""
    errors, seen = [], {}
    forbidden = {x["id"]: x.get("what", "") for x in exp.get("forbid", [])}
    for f in findings:
        fid, cs = f.get("id"), f.get("call_site") or {}
        file = os.path.basename(cs.get("file") or "")
        at = f"{fid} ({f.get('api')}, {f.get('count')} calls) at {where(f) if cs else '(no call site)'}"
        if fid in forbidden:
            errors.append(f"{at}: no {fid} expected in this program ({forbidden[fid]})")
            continue
        if PHASE_MARK in (f.get("message") or "") and f.get("severity") != "note":
            errors.append(f"{at}: made inside a framework phase but a {f.get('severity')}, not a note")
        if fid in PY_WITHOUT_USER_LINE and (not cs or not cs.get("user_code", True)):
            continue
        # A framework's one-time work on its own threads (XLA's autotuner) has no user line either:
        # a note that names the phase (docs/findings.md, "Framework phases").
        if PHASE_MARK in (f.get("message") or "") and f.get("severity") == "note" and not cs.get("user_code", True):
            continue
        if not cs.get("user_code", True):
            errors.append(f"{at}: not marked as the program's own code")
            continue
        i = py_site_of(exp, file, cs.get("line"))
        if i is None:
            errors.append(f"{at}: no expected statement there")
            continue
        s = exp["sites"][i]
        seen.setdefault(i, set()).add(fid)
        if fid not in s["ids"]:
            errors.append(f"{fid} at {file}:{cs.get('line')}: expected "
                          f"{'one of ' + ', '.join(s['ids']) if s['ids'] else 'no finding'} there")
        want = (s.get("severity") or {}).get(fid)
        if mode == "default" and want and f.get("severity") != want:
            errors.append(f"{fid} at {file}:{cs.get('line')}: a {f.get('severity')}, expected a {want} there")
    for i, s in enumerate(exp["sites"]):
        need = set(s.get("need") or s["ids"])
        if (s.get("required") and mode == "all") or s.get("required_default"):
            if not need & seen.get(i, set()):
                errors.append(f"missing: {' or '.join(sorted(need))} at {py_where(s)} ({s['what']})")
    return errors, seen


def verdicts(findings):
    """The (id, severity, file, line) set of a report: what must not depend on the symbols read."""
    out = set()
    for f in findings:
        cs = f.get("call_site") or {}
        out.add((f.get("id"), f.get("severity"), os.path.basename(cs.get("file") or "") or None, cs.get("line")))
    return out


def compare_nosym(default, nosym):
    """Errors where the report made without module symbols differs (issue 44 item 9)."""
    a, b = verdicts(default), verdicts(nosym)
    fmt = lambda v: f"{v[0]} ({v[1]}) at {v[2]}:{v[3]}"  # noqa: E731
    return ([f"only with symbols: {fmt(v)}" for v in sorted(a - b, key=str)] +
            [f"only without symbols: {fmt(v)}" for v in sorted(b - a, key=str)])


def py_reports(run_dir, asyncwatch):
    """{name: findings or None} and errors: the run's JSON reports, made here from its traces where
    one is missing and asyncwatch is given."""
    out, errors = {}, []
    traces = os.path.join(run_dir, "traces")
    for name, extra in list(PY_REPORTS.items()) + [("nosym", [])]:
        path = os.path.join(run_dir, f"report.{name}.json")
        rep = None
        if os.path.exists(path):
            try:
                with open(path) as f:
                    rep = json.load(f)
            except ValueError as e:
                errors.append(f"report.{name}.json: {e}")
        elif asyncwatch and os.path.isdir(traces) and os.listdir(traces):
            env = dict(os.environ, ASYNCWATCH_NO_SYMBOLS="1") if name == "nosym" else None
            rep, err = report(asyncwatch, [traces], extra, env)
            if rep is None:
                errors.append(f"report {name}: {err}")
        else:
            errors.append(f"no report.{name}.json" + ("" if asyncwatch else " (give --build to make it from the traces)"))
        out[name] = None if rep is None else (rep.get("findings") or [])
    return out, errors


def read(path, default=None):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def check_py_run(exp, run_dir, asyncwatch):
    """-> (verdict, errors, reported sites) of one program's run directory."""
    if not os.path.isdir(run_dir):
        return "FAIL", ["not run (no such run directory)"], {}
    skipped = read(os.path.join(run_dir, "skipped"))
    if skipped is not None:
        return "SKIP", [skipped], {}
    errors = []
    rc, bare = read(os.path.join(run_dir, "rc")), read(os.path.join(run_dir, "bare.rc"))
    if rc != "0":
        errors.append(f"the program exited {rc} under asyncwatch")
    if bare is None:
        errors.append("no bare run to compare the exit status with")
    elif bare != rc:
        errors.append(f"exit status {rc} traced, {bare} bare")
    reps, errs = py_reports(run_dir, asyncwatch)
    errors += errs
    seen = {}
    for mode in PY_REPORTS:
        if reps.get(mode) is not None:
            e, s = evaluate_py(exp, reps[mode], mode)
            errors += [f"({'default thresholds' if mode == 'default' else 'every call'}) {x}" for x in e]
            if mode == "all":
                seen = s
    if reps.get("default") is not None and reps.get("nosym") is not None:
        errors += [f"(without symbols) {x}" for x in compare_nosym(reps["default"], reps["nosym"])]
    return ("pass" if not errors else "FAIL"), errors, seen


def py_row(exp, verdict, seen, markdown):
    req = [s for s in exp["sites"] if s.get("required") or s.get("required_default")]
    got = sum(1 for i, s in enumerate(exp["sites"]) if (s.get("required") or s.get("required_default")) and i in seen)
    o = exp["origin"]
    reported = ", ".join(f"{py_where(exp['sites'][i])} {'/'.join(sorted(ids))}" for i, ids in sorted(seen.items()))
    if markdown:
        return (f"| {exp['program']} | {o['repo']} `{exp['script']}` | {len(exp['sites'])} ({len(req)} required) | "
                f"{got} of {len(req)}: {reported} | {verdict} |")
    return f"{exp['program']:20} {len(exp['sites']):3} sites ({len(req):2} req) {got:3} required reported  {verdict}"


def cmd_pyresults(opts, exps):
    asyncwatch = os.path.join(opts.build, "bin", "asyncwatch") if opts.build else None
    if asyncwatch and not os.path.exists(asyncwatch):
        raise SystemExit(f"check_corpus: missing {asyncwatch}")
    root = opts.results
    if os.path.isdir(os.path.join(root, "pycorpus-results")):
        root = os.path.join(root, "pycorpus-results")
    ok, rows = True, []
    for exp in exps:
        verdict, errors, seen = check_py_run(exp, os.path.join(root, "runs", exp["program"]), asyncwatch)
        rows.append(py_row(exp, verdict, seen, opts.markdown))
        rows += [f"    - {e}" for e in errors] if verdict != "pass" else []
        ok = ok and verdict != "FAIL"
    print("\n".join(rows))
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["probe", "results", "pyresults"])
    ap.add_argument("programs", nargs="*")
    ap.add_argument("--bin-dir", help="the corpus binaries here (/work/corpus/bin); probe and results")
    ap.add_argument("--build", help="asyncwatch build directory (bin/asyncwatch); pyresults: only to make "
                                    "missing reports from the traces")
    ap.add_argument("--results", help="results: the unpacked corpus-results directory")
    ap.add_argument("--markdown", action="store_true", help="table rows in markdown")
    ap.add_argument("--h200-table", action="store_true", help="results: then print the H200 cells as markdown rows")
    opts = ap.parse_intermixed_args()
    if opts.command == "pyresults":
        if not opts.results:
            ap.error("pyresults needs --results DIR")
        return 0 if cmd_pyresults(opts, load(opts.programs, "python")) else 1
    if not opts.bin_dir or not opts.build:
        ap.error(f"{opts.command} needs --bin-dir and --build")
    exps = load(opts.programs)
    if opts.command == "results" and not opts.results:
        ap.error("results needs --results DIR")
    ok = cmd_probe(opts, exps) if opts.command == "probe" else cmd_results(opts, exps)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
