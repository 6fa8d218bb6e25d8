#!/usr/bin/env python3
"""The command line as a CI pipeline uses it (docs/ci.md, docs/contracts.md).

  test_report_gates.py ASYNCWATCH GOLDEN_DIR

Each check is one broken item of the issue; the scratch directory is removed at the end."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

AW, GOLDEN = sys.argv[1], sys.argv[2]
failures = []


def check(cond, what, detail=""):
    if not cond:
        failures.append(f"{what}\n{detail}")
        print(f"FAIL: {what}", file=sys.stderr)


def aw(*args, env=None, cwd=None):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([AW, *args], capture_output=True, text=True, env=e, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


# A stand-in "program" for run: copies a checked-in trace into the trace directory (the preload
# library is never loaded: ASYNCWATCH_PRELOAD_LIB names any existing file).
STANDIN = {"ASYNCWATCH_PRELOAD_LIB": os.path.join(GOLDEN, "compare_golden.cmake")}


def standin(trace, extra=""):
    return ["sh", "-c", f'cp "{trace}" "$ASYNCWATCH_OUTPUT_DIR/x-$$.awtrace"; {extra}']


tmp = tempfile.mkdtemp(prefix="aw-gates-")
try:
    g = lambda name: os.path.join(GOLDEN, name)

    # --version, -V, version
    for args in (["--version"], ["-V"], ["version"]):
        rc, out, err = aw(*args)
        check(rc == 0 and re.match(r"^\d+\.\d+\.\d+\n$", out), f"{args} prints the version", out + err)

    # Options are checked before the program starts: it never runs.
    marker = os.path.join(tmp, "ran")
    prog = ["sh", "-c", f"touch {marker}"]
    for bad, msg in ((["--fail-on", "pagable"], "unknown finding id or severity 'pagable'"),
                     (["--fail-on", ""], "give a finding id"),
                     (["--min-blocked-us", "abc"], "'abc' is not a non-negative number"),
                     (["--bogus"], "unknown option --bogus"),
                     (["--baseline", os.path.join(tmp, "missing.json")], "cannot be read")):
        rc, out, err = aw("run", *bad, "-o", os.path.join(tmp, "r0"), "--", *prog, env=STANDIN)
        check(rc == 2, f"run {bad} exits 2", f"rc {rc}\n{out}{err}")
        check(msg in err, f"run {bad} says '{msg}'", err)
        check(len(err) < 600, f"run {bad}: a short message", err)
        check(not os.path.exists(marker), f"run {bad}: the program did not run")
    rc, out, err = aw("report", "--min-blocked-us", "abc", g("mixed.awtrace"))
    check(rc == 2 and "e+308" not in err and "179769" not in err, "--min-blocked-us abc: no DBL_MAX", err)

    # run -o a/b creates the parents.
    nested = os.path.join(tmp, "a", "b", "c")
    rc, out, err = aw("run", "-o", nested, "--", *standin(g("seed-pinned.awtrace")), env=STANDIN)
    check(rc == 0 and any(n.endswith(".awtrace") for n in os.listdir(nested)), "run -o a/b/c creates a/b", err)

    # report d d/*.awtrace: each trace once.
    fork = g("fork")
    names = sorted(os.path.join(fork, n) for n in os.listdir(fork))
    rc, out, err = aw("report", "--format", "json", fork, *names, names[0])
    rep = json.loads(out)
    check(rc == 0 and len(rep["processes"]) == 2, "report d d/*.awtrace reads each trace once",
          str([p["trace"] for p in rep["processes"]]))
    check(sum(p["count"] for p in rep["findings"][0]["processes"]) == 2, "... and counts its calls once")

    # No usable driver or device: exit 4 (not 0, not 1), a message pointing to --sim.
    rc, out, err = aw("report", g("no-device.awtrace"))
    check(rc == 4 and "--sim" in err and "no usable CUDA driver or device" in err, "report: no device -> 4", err)
    check("no CUDA call succeeded" in out, "the text report says why it is empty", out)
    rc, out, err = aw("run", "--fail-on", "warning", "-o", os.path.join(tmp, "nodev"), "--",
                      *standin(g("no-device.awtrace")), env=STANDIN)
    check(rc == 4 and "asyncwatch run --sim" in err, "run --fail-on warning without a device: 4", f"rc {rc}\n{err}")
    rc, out, err = aw("report", "--format", "json", g("no-device.awtrace"))
    p = json.loads(out)["processes"][0]
    check(p["no_usable_device"] is True and p["cuda_calls"] == 4 and p["cuda_calls_failed_no_device"] == 4,
          "JSON: no_usable_device, cuda_calls", json.dumps(p))
    rc, out, err = aw("report", "--format", "json", g("mixed.awtrace"))
    check(rc == 0 and json.loads(out)["processes"][0]["no_usable_device"] is False, "mixed: a device")

    # run --format json|sarif: the report goes to a file, stdout stays the program's.
    for fmt in ("json", "sarif"):
        d = os.path.join(tmp, "fmt-" + fmt)
        rc, out, err = aw("run", "--format", fmt, "-o", d, "--",
                          *standin(g("seed-pageable.awtrace"), "echo PROGRAM-OUTPUT"), env=STANDIN)
        check(rc == 0 and out == "PROGRAM-OUTPUT\n", f"run --format {fmt}: stdout is the program's", repr(out))
        path = os.path.join(d, "report." + fmt)
        check(os.path.exists(path) and f"report written to {path}" in err, f"run --format {fmt}: {path}", err)
        if os.path.exists(path):
            json.load(open(path))
    other = os.path.join(tmp, "chosen.sarif")
    rc, out, err = aw("run", "--format", "sarif", "--report-output", other, "-o", os.path.join(tmp, "fmt-x"), "--",
                      *standin(g("seed-pageable.awtrace")), env=STANDIN)
    check(rc == 0 and json.load(open(other))["version"] == "2.1.0", "run --report-output FILE")
    rc, out, err = aw("run", "--format", "json", "--report-output", "-", "-o", os.path.join(tmp, "fmt-y"), "--",
                      *standin(g("seed-pageable.awtrace")), env=STANDIN)
    check(rc == 0 and json.loads(out)["schema"] == "asyncwatch-report", "run --report-output - : stdout", out[:200])

    # run: the status that waitpid saw goes into the report for run's own child (its trace here is
    # the golden one with the pid patched to the shell's, which is the child run started).
    patch = ("python3 -c \"import sys,struct; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); "
             "b[24:32]=struct.pack('<Q', int(sys.argv[2])); open(p,'wb').write(b)\" "
             "\"$ASYNCWATCH_OUTPUT_DIR/x-$$.awtrace\" $$")
    for tail, want_rc, want_status, want_signal in (("exit 3", 3, 3, None), ("kill -KILL $$", 137, -1, 9)):
        d = os.path.join(tmp, "status-" + str(want_rc))
        rc, out, err = aw("run", "--format", "json", "-o", d, "--",
                          *standin(g("seed-pinned.awtrace"), patch + "; " + tail), env=STANDIN)
        check(rc == want_rc, f"run passes on '{tail}' as {want_rc}", f"rc {rc}\n{err}")
        p = json.load(open(os.path.join(d, "report.json")))["processes"][0]
        check(p["exit_status"] == want_status and p["signal"] == want_signal, f"'{tail}': exit_status/signal",
              json.dumps(p))

    # --fail-on by blocked time; --baseline.
    seed = g("seed-pageable.awtrace")  # pageable D2H 1.74 s, H2D 570 ms
    check(aw("report", "--fail-on", "blocked>=1s", seed)[0] == 1, "blocked>=1s fails on 1.74 s")
    check(aw("report", "--fail-on", "blocked>=2s", seed)[0] == 0, "blocked>=2s passes")
    check(aw("report", "--fail-on", "warning,blocked>=1500ms", seed)[0] == 1, "warning,blocked>=1500ms")
    check(aw("report", "--fail-on", "warning", "--fail-min-blocked-us", "2000000", seed)[0] == 0,
          "--fail-min-blocked-us 2 s passes")
    rc, out, err = aw("report", "--fail-on", "blocked>=5parsecs", seed)
    check(rc == 2 and "not a duration" in err, "blocked>=BAD is an error", err)
    base = os.path.join(tmp, "base.json")
    rc, out, err = aw("report", "--format", "json", "-o", base, g("mixed.awtrace"))
    check(rc == 0, "baseline written")
    check(aw("report", "--fail-on", "warning", g("mixed.awtrace"))[0] == 1, "mixed fails on warning")
    rc, out, err = aw("report", "--fail-on", "warning", "--baseline", base, g("mixed.awtrace"))
    check(rc == 0 and "baseline:" in out and ", 0 new" in out, "with its own baseline: no new finding", out[-400:])
    sbase = os.path.join(tmp, "base.sarif")
    aw("report", "--format", "sarif", "-o", sbase, g("seed-pinned.awtrace"))
    rc, out, err = aw("report", "--fail-on", "pageable-async-copy", "--baseline", sbase, seed)
    check(rc == 1, "a baseline without the finding: the gate fails", out[-400:])
    rc, out, err = aw("report", "--format", "sarif", "--baseline", sbase, seed)
    states = {r["baselineState"] for r in json.loads(out)["runs"][0]["results"]}
    check("new" in states, "SARIF baselineState", str(states))
    bad = os.path.join(tmp, "bad.json")
    open(bad, "w").write('{"schema": "something-else"}')
    rc, out, err = aw("report", "--baseline", bad, seed)
    check(rc == 2 and "neither an asyncwatch JSON report nor a SARIF log" in err, "a bad baseline is an error", err)

    # Text: summary table first, --top, single calls without min/median/max, trimmed stacks.
    rc, out, err = aw("report", "--top", "3", g("mixed.awtrace"))
    table = out.index("#  severity  rule")
    first = re.search(r"^\S.*: (warning|note|error): ", out, re.M)
    check(first and table < first.start(), "the summary table comes before the findings", out[:1500])
    check(len(re.findall(r"^\S.*: (warning|note|error): ", out, re.M)) == 3, "--top 3: three findings", out)
    check("and 10 findings not shown (--top)" in out, "--top says how many were left out", out)
    check(re.search(r"1  warning   pageable-async-copy +1  30.0 ms  30.0 ms   25.6%", out),
          "--top: the ranking's first, with its blocked time, impact and share of the run", out[:900])
    check("1 call, 64 MiB, blocked 30.0 ms, " in out and "min 30.0 ms" not in out, "one call: no min/median/max")
    check(aw("report", "--top", "1", "--fail-on", "blocked-nothing,note", g("mixed.awtrace"))[0] == 2,
          "--fail-on typo still an error with --top")
    check(aw("report", "--top", "1", "--fail-on", "implicit-sync", g("mixed.awtrace"))[0] == 1,
          "the gate sees the findings --top hides")
    # impact>=: what fixing a finding saves end to end (the mixed trace's most: 30 ms, 25.6 % of the run).
    for gate, want in (("impact>=20%", 1), ("impact>=30%", 0), ("impact>=29ms", 1), ("impact>=31ms", 0),
                       ("warning,impact>=25%", 1), ("explicit-sync,impact>=1%", 0), ("impact>=abc", 2),
                       ("impact>=101%", 2), ("impact>=", 2)):
        rc = aw("report", "--fail-on", gate, g("mixed.awtrace"))[0]
        check(rc == want, f"--fail-on {gate}: exit {want}", f"exit {rc}")
    rc, out, err = aw("report", g("mixed.awtrace"))
    check("library and runtime frames not shown; --stacks full" in out, "stacks trimmed by default")
    check("libasyncwatch.so+0x1234" not in out, "the tool's frame is trimmed")
    check("/work/lib/libasyncwatch.so: cannot read it for symbols" not in out and
          "1 note about library modules without symbols here not shown" in out and
          "/work/app/mixed: cannot read it for symbols" in out,
          "module notes only when they change a result (the program's, not the tool's)", out[:800])
    rc, out, err = aw("report", "--stacks", "full", g("mixed.awtrace"))
    check("libasyncwatch.so+0x1234" in out, "--stacks full shows it")
    check("/work/lib/libasyncwatch.so: cannot read it for symbols" in out, "--stacks full: every note")
    rc, out, err = aw("report", g("ranks"))
    check(out.count("/work/app/mpi_app: cannot read it for symbols") == 1 and "(and 1 more processes)" in out,
          "a note of every rank printed once", out[:800])
    rc, out, err = aw("report", g("mixed.awtrace"), env={"TERM": "xterm"})
    check("\033[" not in out, "no colour when stdout is not a terminal")
    import pty
    master, slave = pty.openpty()
    proc = subprocess.Popen([AW, "report", g("seed-pinned.awtrace")], stdout=slave, stderr=subprocess.DEVNULL,
                            env={k: v for k, v in os.environ.items() if k != "NO_COLOR"})
    os.close(slave)
    tty_out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the other side closed
            break
        if not chunk:
            break
        tty_out += chunk
    proc.wait()
    os.close(master)
    check(b"\033[1m" in tty_out, "colour on a terminal", repr(tty_out[:200]))

    # Ranks and filters.
    ranks = g("ranks")
    rc, out, err = aw("report", "--format", "json", ranks)
    rep = json.loads(out)
    check([p["rank"] for p in rep["processes"]] == [0, 1], "ranks from the header", json.dumps(rep["processes"]))
    check(rep["processes"][0]["rank_source"] == "OMPI_COMM_WORLD_RANK", "rank_source")
    check(len(rep["findings"]) == 1 and [p["rank"] for p in rep["findings"][0]["processes"]] == [0, 1],
          "one call site of two ranks: one finding, per-rank counts")
    rc, out, err = aw("report", ranks)
    check("pid 700 (rank 0)" in out and "pid 701 (rank 1)" in out, "text: rank per process", out[:600])
    rc, out, err = aw("report", "--format", "json", "--rank", "1", ranks)
    check([p["pid"] for p in json.loads(out)["processes"]] == [701], "--rank 1")
    rc, out, err = aw("report", "--format", "json", "--pid", "700", ranks)
    check([p["pid"] for p in json.loads(out)["processes"]] == [700], "--pid 700")
    rc, out, err = aw("report", "--rank", "7", ranks)
    check(rc == 2 and "no process matches" in err, "--rank that matches nothing: 2", err)
    rc, out, err = aw("report", "--format", "json", "--rule", "explicit-sync", g("mixed.awtrace"))
    check({f["id"] for f in json.loads(out)["findings"]} == {"explicit-sync"}, "--rule explicit-sync")
    rc, out, err = aw("report", "--rule", "no-such-rule", g("mixed.awtrace"))
    check(rc == 2 and "unknown finding id 'no-such-rule'" in err, "--rule typo", err)
    # NVTX ranges: --range keeps the findings with calls inside a range of that name.
    nvtx = g("nvtx.awtrace")
    rc, out, err = aw("report", "--format", "json", "--range", "forward", nvtx)
    rep = json.loads(out)
    check(rc == 0 and [f["count"] for f in rep["findings"]] == [4] and rep["findings"][0]["ranges"] ==
          [{"name": "epoch", "calls": 4}, {"name": "train_step", "calls": 3}, {"name": "forward", "calls": 1}],
          "--range forward: the finding with one call in it, all its ranges", out[:1500])
    rc, out, err = aw("report", "--format", "json", nvtx)
    check(sorted(f["count"] for f in json.loads(out)["findings"]) == [1, 4], "no --range: both findings")
    rc, out, err = aw("report", "--range", "no-such-range", nvtx)
    check(rc == 0 and "[pageable-async-copy]" not in out, "--range that no call was in: no finding", out[:800])
    rc, out, err = aw("report", "--range", "", nvtx)
    check(rc == 2 and "empty range name" in err, "--range '': usage error", err)
    part = os.path.join(tmp, "nvtx.json")
    check(aw("report", "--format", "json", "-o", part, nvtx)[0] == 0, "nvtx part written")
    rc, out, err = aw("report", "--format", "json", part, part)
    ranged = [f for f in json.loads(out)["findings"] if f["count"] == 8]
    check(rc == 0 and len(ranged) == 1 and ranged[0]["ranges"] ==
          [{"name": "epoch", "calls": 8}, {"name": "train_step", "calls": 6}, {"name": "forward", "calls": 2}],
          "merged JSON reports add the calls per range", out[:1500])

    # Merging JSON reports written separately (one per rank): the findings of the traces reported
    # together, summed by fingerprint.
    parts = []
    for i, t in enumerate(sorted(os.listdir(ranks))):
        parts.append(os.path.join(tmp, f"part{i}.json"))
        check(aw("report", "--format", "json", "-o", parts[-1], os.path.join(ranks, t))[0] == 0, "part written")
    rc, out, err = aw("report", "--format", "json", *parts)
    merged = json.loads(out)
    together = json.loads(aw("report", "--format", "json", ranks)[1])
    keep = lambda f: (f["fingerprint"], f["count"], f["bytes"], f["blocked_ns"]["total"], f["blocked_ns"]["max"],
                      f["blocked_ns"]["min"], [(p["pid"], p["rank"], p["count"]) for p in f["processes"]])
    check(rc == 0 and [keep(f) for f in merged["findings"]] == [keep(f) for f in together["findings"]],
          "report a.json b.json merges as the traces together", out[:1500])
    check([p["pid"] for p in merged["processes"]] == [700, 701] and merged["summary"]["findings"] == 1, "merged summary")
    check(aw("report", "--format", "json", "--fail-on", "blocked>=8ms", *parts)[0] == 1, "gate on merged reports")
    check(aw("report", *parts)[0] == 2, "merging needs --format json")
    check(aw("report", "--format", "json", parts[0], g("mixed.awtrace"))[0] == 2, "reports and traces mixed: 2")

    # Parallel reading: the same report as one by one.
    inputs = [g("mixed.awtrace"), g("seed-pageable.awtrace"), g("seed-pinned.awtrace"), fork, ranks,
              g("crashed.awtrace")]
    for fmt in ("text", "json", "sarif"):
        one = aw("report", "--format", fmt, "-j", "1", *inputs)
        many = aw("report", "--format", fmt, "-j", "4", *inputs)
        check(one == many, f"--format {fmt}: -j 4 gives the report of -j 1")

    # SARIF: the official 2.1.0 schema and what GitHub code scanning needs (sarif_structure.py), on
    # every golden trace; fingerprints the same in two runs and distinct within one.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import sarif_structure
    for inp in inputs + [g("no-device.awtrace"), g("v2")]:
        rc, out, err = aw("report", "--format", "sarif", inp)
        doc = json.loads(out)
        try:
            sarif_structure.check(doc)
        except Exception as e:  # jsonschema.ValidationError or AssertionError
            check(False, f"SARIF of {inp} is valid for code scanning", str(e)[:2000])
        again = json.loads(aw("report", "--format", "sarif", inp)[1])
        fps = [r["partialFingerprints"]["asyncwatch/v1"] for r in doc["runs"][0]["results"]]
        check(fps == [r["partialFingerprints"]["asyncwatch/v1"] for r in again["runs"][0]["results"]],
              f"{inp}: fingerprints stable across runs")
        check(len(set(fps)) == len(fps), f"{inp}: fingerprints distinct", str(fps))
    # The check can fail: a real report made invalid in ways the schema forbids is rejected.
    good = json.loads(aw("report", "--format", "sarif", g("mixed.awtrace"))[1])
    for what, spoil in (("an unknown level", lambda d: d["runs"][0]["results"][0].update(level="fatal")),
                        ("a property SARIF does not define", lambda d: d["runs"][0].update(findings=[])),
                        ("a region line of 0", lambda d: d["runs"][0]["results"][0]["locations"][0]
                         ["physicalLocation"].setdefault("region", {}).update(startLine=0))):
        bad = json.loads(json.dumps(good))
        spoil(bad)
        try:
            sarif_structure.check(bad)
            check(False, f"a SARIF document with {what} is rejected")
        except AssertionError:
            pass
    # GitLab Code Quality: every finding an issue with GitLab's required fields, the SARIF
    # fingerprints (unique in the report), paths relative to the source root when below it.
    for inp in inputs:
        issues = json.loads(aw("report", "--format", "codequality", inp)[1])
        sarif = json.loads(aw("report", "--format", "sarif", inp)[1])["runs"][0]["results"]
        check(isinstance(issues, list) and len(issues) == len(sarif), f"{inp}: one Code Quality issue per finding")
        for i, r in zip(issues, sarif):
            check(set(i) == {"description", "check_name", "fingerprint", "severity", "location"}, f"{inp}: issue keys", str(i))
            check(i["severity"] in ("info", "minor", "major", "critical", "blocker"), f"{inp}: severity", i["severity"])
            check(i["fingerprint"] == r["partialFingerprints"]["asyncwatch/v1"] and i["check_name"] == r["ruleId"],
                  f"{inp}: the SARIF result's fingerprint and rule")
            check(i["description"] == r["message"]["text"], f"{inp}: the SARIF result's message")
            check(isinstance(i["location"]["path"], str) and i["location"]["lines"]["begin"] >= 1, f"{inp}: location", str(i))
        check(len({i["fingerprint"] for i in issues}) == len(issues), f"{inp}: Code Quality fingerprints unique")
    seed = json.loads(aw("report", "--format", "codequality", "--source-root", "/work", g("seed-pageable.awtrace"))[1])
    sarif_seed = json.loads(aw("report", "--format", "sarif", "--source-root", "/work", g("seed-pageable.awtrace"))[1])
    for i, r in zip(seed, sarif_seed["runs"][0]["results"]):
        loc = r["locations"][0]["physicalLocation"]
        if loc["artifactLocation"].get("uriBaseId") == "SRCROOT":
            check(i["location"]["path"] == loc["artifactLocation"]["uri"] and i["location"]["lines"]["begin"] == loc.get("region", {}).get("startLine", 1),
                  "codequality: the path below --source-root and the line, as in SARIF", str(i["location"]))
    rc, out, err = aw("report", "--format", "sarif", "--source-root", tmp, g("mixed.awtrace"))
    check(json.loads(out)["runs"][0]["originalUriBaseIds"]["SRCROOT"]["uri"] == "file://" + os.path.realpath(tmp) + "/",
          "--source-root DIR")
finally:
    shutil.rmtree(tmp)

if failures:
    print(f"{len(failures)} check(s) failed:\n" + "\n".join(failures), file=sys.stderr)
    sys.exit(1)
print("all report-gate checks passed")
