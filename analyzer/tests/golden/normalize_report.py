#!/usr/bin/env python3
"""Reduces an `asyncwatch report --format json` to what a golden test of a *real* trace (simulator
or GPU) can pin down on any machine, and prints it as canonical JSON:

* kept exactly: the GPU overlap figures' streams, operation counts, rules and calls (times as
  magnitudes); finding ids, severities, APIs, driver APIs, directions, memory kinds, causes,
  kernels, counts, bytes, evidence counts, waited-for kernels, launch/callback counters, the
  processes' headers and record counts, the summary's call counts; each finding's rank in the
  report and its impact's basis;
* times (impact_ns too) become orders of magnitude ("1e8" for 100-999 ms), durations inside messages become
  "<t>", share_of_wall is dropped;
* call sites and stacks are dropped (the binaries a trace names are seldom on the test machine,
  or are other builds): only whether the finding has a call site and the module it lies in stay.

Findings are sorted by their categorical fields, so a change in ranking by time cannot fail the
test, while a change in any id, direction, memory kind, cause or count does.

  normalize_report.py REPORT.json    (or the report on standard input)
"""
import json
import math
import os
import re
import sys

DURATION = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ns|us|µs|ms|s|min|h)\b")


def magnitude(ns):
    """Order of magnitude of a time in ns: 0 -> "0", 1.7e9 -> "1e9"."""
    if ns is None:
        return None
    ns = float(ns)
    if ns <= 0:
        return "0"
    return "1e%d" % int(math.floor(math.log10(ns)))


def base(path):
    return os.path.basename(path) if isinstance(path, str) and path else path


def normalize(report):
    out = {"schema": report.get("schema"), "schema_version": report.get("schema_version")}
    procs = []
    for p in report.get("processes", []):
        procs.append({
            "executable": base(p.get("executable")),
            "command_line": " ".join([base(w) if i == 0 else w
                                      for i, w in enumerate((p.get("command_line") or "").split(" "))]),
            "trace": base(p.get("trace")),
            "closed_cleanly": p.get("closed_cleanly"),
            "exit_status": p.get("exit_status"),
            "device": p.get("device"),
            "simulated": p.get("simulated"),
            "records": p.get("records"),
            "records_lost": p.get("records_lost"),
            "forked": p.get("parent_pid_if_forked") is not None,
            "async_calls": p.get("async_calls"),
            "async_calls_blocking": p.get("async_calls_blocking"),
            "wall_ns": magnitude(p.get("wall_ns")),
            "blocked_ns_total": magnitude(p.get("blocked_ns_total")),
        })
        if p.get("gpu_overlap") is not None:  # GPU times traces: streams, operations, rules, calls kept
            procs[-1]["gpu_overlap"] = [{
                "stream": s.get("stream"),
                "operations": s.get("operations"),
                "busy_ns": magnitude(s.get("busy_ns")),
                "first_to_last_ns": magnitude(s.get("first_to_last_ns")),
                "rules": [{"id": r.get("id"), "calls": r.get("calls"),
                           "host_blocked_ns": magnitude(r.get("host_blocked_ns")),
                           "gpu_busy_ns": magnitude(r.get("gpu_busy_ns")),
                           "gpu_idle_ns": magnitude(r.get("gpu_idle_ns"))} for r in s.get("rules", [])],
            } for s in p["gpu_overlap"]]
    out["processes"] = procs
    s = report.get("summary", {})
    out["summary"] = {
        "async_calls": s.get("async_calls"),
        "async_calls_async": s.get("async_calls_async"),
        "async_calls_blocking": s.get("async_calls_blocking"),
        "blocked_ns_total": magnitude(s.get("blocked_ns_total")),
        "findings": s.get("findings"),
    }
    out["thresholds"] = report.get("thresholds")
    findings = []
    for rank, f in enumerate(report.get("findings", []), 1):
        b = f.get("blocked_ns") or {}
        cs = f.get("call_site")
        n = {
            "id": f.get("id"),
            "severity": f.get("severity"),
            "api": f.get("api"),
            "driver_api": f.get("driver_api"),
            "direction": f.get("direction"),
            "host_memory": f.get("host_memory"),
            "cause": f.get("cause"),
            "kernel": f.get("kernel"),
            "count": f.get("count"),
            "bytes": f.get("bytes"),
            "blocked_ns": {"total": magnitude(b.get("total")), "max": magnitude(b.get("max"))},
            "evidence": f.get("evidence"),
            "waited_for": f.get("waited_for"),
            "call_site": None if cs is None else {"module": base(cs.get("module"))},
            "stack_depth": len(f.get("stack") or []),
            "processes": len(f.get("processes") or []),
            "message": DURATION.sub("<t>", f.get("message") or ""),
            # The ranking (most impact first) and the impact, as an order of magnitude, with its basis.
            "rank": rank,
            "impact_ns": magnitude(f.get("impact_ns")),
            "impact_basis": f.get("impact_basis"),
        }
        for k in ("outstanding_launches_max", "stream_drained_before_return"):
            if k in f:
                n[k] = f[k]
        findings.append(n)
    findings.sort(key=lambda n: json.dumps({k: n[k] for k in ("id", "api", "driver_api", "direction", "host_memory",
                                                              "cause", "kernel", "count", "bytes", "call_site",
                                                              "message")}, sort_keys=True))
    out["findings"] = findings
    return out


def main():
    if len(sys.argv) > 2:
        sys.exit(__doc__)
    text = open(sys.argv[1]).read() if len(sys.argv) == 2 else sys.stdin.read()
    json.dump(normalize(json.loads(text)), sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
