#!/usr/bin/env python3
"""On the simulator: GPU times, the timeline's GPU tracks, flows, finding marks, its bounds,
and the report's overlap figures, on pinned_vs_pageable (the seed's pageable and pinned copies, a
kernel before each device-to-host copy, one trace) and threads_streams (4 threads, 4 streams).
  check_gpu_timeline.py ASYNCWATCH BUILD_DIR
Temporary files in a TemporaryDirectory (removed)."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
failures = []


def check(cond, what, detail=""):
    print(("ok: " if cond else "FAILED: ") + what + (f" ({detail})" if detail and not cond else ""))
    if not cond:
        failures.append(what)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def decode(path, *expect):
    args = [sys.executable, os.path.join(HERE, "decode_perfetto.py")]
    for e in expect:
        args += ["--expect", e]
    r = run(args + [path])
    print(r.stdout[-3000:])
    check(r.returncode == 0, f"decode_perfetto {os.path.basename(path)} {' '.join(expect)}")
    return json.loads(r.stdout[: r.stdout.rindex("}") + 1])


def main():
    aw, build = sys.argv[1], sys.argv[2]
    app = os.path.join(build, "test_apps", "pinned_vs_pageable")
    multi = os.path.join(build, "test_apps", "threads_streams")
    with tempfile.TemporaryDirectory(prefix="aw-timeline-") as d:
        # The program's own output is the same with and without GPU times (timings aside).
        # Kernels of 10 M cycles (5 ms on the simulator, 100x the app's default): on a loaded 2-core CI
        # machine the pinned copy was issued 85 us after a 50 us kernel had ended, so nothing overlapped.
        app_args = ["8388608", "1", "10000000"]
        plain = run([aw, "run", "--sim", "-o", f"{d}/plain", "--", app] + app_args)
        timed = run([aw, "run", "--sim", "--gpu-times", "-o", f"{d}/timed", "--", app] + app_args)
        check(plain.returncode == 0 and timed.returncode == 0, "runs succeed")
        lines = lambda out: [l for l in out.splitlines() if "rounds of pageable and pinned copies" in l]  # the program's result line
        check(lines(plain.stdout) == lines(timed.stdout) and len(lines(plain.stdout)) == 1 and lines(plain.stdout)[0].endswith(": ok"),
              "the program's results are unchanged by --gpu-times")
        check("GPU, stream" in timed.stdout and "pageable-async-copy" in timed.stdout, "the report has the overlap figures")
        check("GPU, stream" not in plain.stdout, "no overlap figures without GPU times")

        # Perfetto: one GPU track with the 3 kernels and 4 copies, each with its flow from its call.
        r = run([aw, "timeline", "-o", f"{d}/t.pftrace", f"{d}/timed"])
        check(r.returncode == 0, "timeline --format perfetto (from the .pftrace name)")
        s = decode(f"{d}/t.pftrace", "gpu_tracks=1", "gpu_slices=7", "flows=7", "flagged=2")
        gpu = [t for n, t in s["tracks"].items() if n.startswith("stream")]
        check(gpu and "sleep_kernel" in gpu[0]["names"], "the GPU track names the kernel")
        check(not any("__cudaLaunchKernel" in n for t in s["tracks"].values() for n in t["names"]),
              "launches named as in the report")
        r = run([aw, "timeline", "--format", "perfetto", "-o", f"{d}/plain.pftrace", f"{d}/plain"])
        decode(f"{d}/plain.pftrace")
        check(json.loads(run([sys.executable, os.path.join(HERE, "decode_perfetto.py"), f"{d}/plain.pftrace"]).stdout)["gpu_slices"] == 0,
              "no GPU slices without GPU times")

        # JSON: what overlapped. The pageable device-to-host copy blocked the host while the stream ran
        # the kernel before it; the pinned one returned while the kernel still ran (overlap).
        r = run([aw, "timeline", "-o", f"{d}/t.json", f"{d}/timed"])
        ev = [e for e in json.load(open(f"{d}/t.json"))["traceEvents"] if e["ph"] == "X"]
        host = [e for e in ev if e["tid"] < 1_000_000_000]
        gpu = sorted([e for e in ev if e["tid"] >= 1_000_000_000 and e["cat"].startswith("gpu")], key=lambda e: e["ts"])
        kernels = [e for e in gpu if e["name"] == "sleep_kernel"]
        d2h = {e["args"]["dst"]: e for e in host if e["name"].startswith("cudaMemcpyAsync DtoH")}
        check(len(kernels) == 3 and set(d2h) == {"pageable", "pinned"}, "3 kernels on the GPU track, 2 device-to-host copies")
        if len(kernels) == 3 and len(d2h) == 2:
            pinned_k, pageable_k = kernels[1], kernels[2]
            pg, pn = d2h["pageable"], d2h["pinned"]
            check(pg["ts"] < pageable_k["ts"] + pageable_k["dur"] and pg["ts"] + pg["dur"] > pageable_k["ts"] + pageable_k["dur"],
                  "pageable DtoH: the host is blocked in the call while the stream runs the kernel")
            # Returned before the kernel ended; or, where a loaded machine descheduled this thread past the
            # kernel's end, at least it did not wait for it as the pageable copy did (a tenth of its time).
            check(pn["ts"] + pn["dur"] < pinned_k["ts"] + pinned_k["dur"] or pn["dur"] * 10 < pg["dur"],
                  "pinned DtoH: the call returned while the kernel still ran (overlap)",
                  f"pinned call {pn['ts']}+{pn['dur']} us, kernel {pinned_k['ts']}+{pinned_k['dur']} us, pageable call {pg['dur']} us")
            check("flagged" in pg["cat"] and pg["args"].get("rule") == "pageable-async-copy" and "call_site" in pg["args"],
                  "the pageable copy carries its finding (rule, call site)")
            check("flagged" not in pn["cat"], "the pinned copy is not flagged")
        check(sum(1 for e in host if "bind_id" in e) >= 7 and sum(1 for e in gpu if "bind_id" in e) >= 7, "JSON flows")

        # Bounds: findings only, a window, the size limit.
        r = run([aw, "timeline", "--findings-only", "--format", "json", "-o", f"{d}/f.json", f"{d}/timed"])
        fev = [e for e in json.load(open(f"{d}/f.json"))["traceEvents"] if e["ph"] == "X"]
        check(r.returncode == 0 and fev and all("flagged" in e["cat"] or e["cat"].startswith("gpu") for e in fev)
              and len(fev) < len(ev), "--findings-only keeps the flagged calls and their GPU work")
        t_end = max(e["ts"] + e["dur"] for e in ev) / 1e6
        r = run([aw, "timeline", "--window", f"{t_end / 2:.6f}:{t_end:.6f}", "-o", f"{d}/w.json", f"{d}/timed"])
        wev = [e for e in json.load(open(f"{d}/w.json"))["traceEvents"] if e["ph"] == "X"]
        check(r.returncode == 0 and 0 < len(wev) < len(ev) and all(e["ts"] + e["dur"] >= t_end / 2 * 1e6 - 1 for e in wev),
              "--window keeps what overlaps it")
        r = run([aw, "timeline", "--max-size-mib", "0.001", "-o", f"{d}/big.json", f"{d}/timed"])
        check(r.returncode == 2 and "would be about" in r.stderr and not os.path.exists(f"{d}/big.json"),
              "over --max-size-mib: the expected size, nothing written")
        for bad in (["--window", "3:1"], ["--window", "x"], ["--format", "svg"]):
            r = run([aw, "timeline", *bad, "-o", f"{d}/bad.json", f"{d}/timed"])
            check(r.returncode == 2 and not os.path.exists(f"{d}/bad.json"), f"{' '.join(bad)}: a clear error")

        # Several streams of several threads: one GPU track each.
        r = run([aw, "run", "--sim", "--gpu-times", "-o", f"{d}/multi", "--", multi])
        check(r.returncode == 0, "threads_streams runs")
        run([aw, "timeline", "-o", f"{d}/m.pftrace", f"{d}/multi"])
        decode(f"{d}/m.pftrace", "gpu_tracks=4", "threads=4", "flows=16")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
