#!/usr/bin/env python3
"""Test cli.simulated-outputs: a --sim run's figures are marked as the simulator's in every output
that leaves the machine (SARIF run properties and each result's message, Code Quality, both
timeline formats, the HTML title), and a GPU trace's are not.

usage: check_simulated_outputs.py ASYNCWATCH PROGRAM SCRATCH_DIR GPU_TRACE
"""
import json
import shutil
import subprocess
import sys
from pathlib import Path

PREFIX = "[simulated, no GPU] "


def run(*args):
    done = subprocess.run(list(args), capture_output=True)
    if done.returncode not in (0, 1):
        sys.exit(f"FAILED: {' '.join(map(str, args))}: exit {done.returncode}\n{done.stderr.decode(errors='replace')}")
    return done.stdout


def outputs(aw, trace, scratch, tag):
    """The outputs of one trace: (sarif, codequality, timeline json, perfetto bytes, html)."""
    sarif = json.loads(run(aw, "report", "--format", "sarif", trace))
    cq = json.loads(run(aw, "report", "--format", "codequality", trace))
    tl = json.loads(run(aw, "timeline", "--format", "json", trace))
    pf = scratch / f"{tag}.pftrace"
    run(aw, "timeline", "-o", pf, trace)
    html = run(aw, "report", "--format", "html", "-o", "-", trace).decode()
    return sarif, cq, tl, pf.read_bytes(), html


def main():
    aw, program, scratch, gpu_trace = sys.argv[1], sys.argv[2], Path(sys.argv[3]), sys.argv[4]
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    try:
        traces = scratch / "traces"
        run(aw, "run", "--sim", "-o", traces, "--", program)
        sim_trace = next(traces.glob("*.awtrace"))
        problems = []

        sarif, cq, tl, pf, html = outputs(aw, sim_trace, scratch, "sim")
        r = sarif["runs"][0]
        if not r.get("properties", {}).get("simulated"):
            problems.append("SARIF run properties: no simulated: true")
        if not r["results"]:
            problems.append("SARIF: no results to check (the program should have findings)")
        for res in r["results"]:
            if not res["message"]["text"].startswith(PREFIX) or not res["properties"].get("simulated"):
                problems.append(f"SARIF result not marked: {res['message']['text'][:80]}")
        for issue in cq:
            if not issue["description"].startswith(PREFIX):
                problems.append(f"Code Quality issue not marked: {issue['description'][:80]}")
        if not tl.get("otherData", {}).get("simulated"):
            problems.append("timeline JSON: no otherData.simulated")
        names = [e["args"]["name"] for e in tl["traceEvents"] if e.get("name") == "process_name"]
        if not names or not all(", simulated)" in n for n in names):
            problems.append(f"timeline JSON process names: {names}")
        if b", simulated)" not in pf:
            problems.append("Perfetto timeline: the process track's name does not say simulated")
        if "(simulated, no GPU)</title>" not in html:
            problems.append("HTML title does not say simulated")

        sarif, cq, tl, pf, html = outputs(aw, gpu_trace, scratch, "gpu")
        text = json.dumps(sarif) + json.dumps(cq) + json.dumps(tl) + html
        if "simulated, no GPU" in text or "otherData" in tl or b", simulated)" in pf or "simulated_note" in text:
            problems.append("a GPU trace's outputs are marked simulated")
        for p in problems:
            print("FAILED:", p)
        if problems:
            return 1
        print(f"ok: {len(r['results'])} SARIF results, {len(names)} timeline process(es) marked; the GPU trace's not")
        return 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
