#!/usr/bin/env python3
"""GPU validation of the test apps, run by `validate_on_gpu.sh apps` on a GPU machine.

For every expectation file in test_apps/apps/expected/ and each build (shared runtime, and the
.static build where there is one) it runs the app bare, then under asyncwatch:
  - `asyncwatch run -o RUN/traces -- app ARGS` when the asyncwatch command works on this machine,
  - otherwise LD_PRELOAD=libasyncwatch.so with ASYNCWATCH_OUTPUT_DIR=RUN/traces (the traces are
    analysed back on the development machine: check_app.py results DIR),
then `asyncwatch report --format json` (when possible) and the comparison of check_app.py. The
PyTorch and CuPy scripts beside this file run bare and under LD_PRELOAD.

Everything lands in a work directory, packed into OUT/validate.tar.gz (plus OUT/summary.txt);
the table is printed at the end. Python 3 standard library only.
"""
import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
APPS = os.path.join(os.path.dirname(HERE), "apps")
sys.path.insert(0, APPS)
import check_app  # noqa: E402


def run(cmd, env, timeout, cwd, prefix):
    """Runs cmd; writes prefix.stdout / .stderr / .rc; returns (rc, stdout, stderr, wall_s)."""
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
        # Killed by signal N: 128 + N, as check_app.run and `asyncwatch run` report it (Python gives -N).
        rc, out, err = (p.returncode if p.returncode >= 0 else 128 - p.returncode), p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = 124, e.stdout or b"", (e.stderr or b"") + f"\n[validate] timed out after {timeout} s\n".encode()
    except OSError as e:
        rc, out, err = 127, b"", f"[validate] cannot run {cmd[0]}: {e}\n".encode()
    wall = time.monotonic() - t0
    for ext, data in (("stdout", out), ("stderr", err)):
        with open(f"{prefix}{ext}", "wb") as f:
            f.write(data[-4_000_000:])
    with open(f"{prefix}rc", "w") as f:
        f.write(f"{rc}\n")
    with open(f"{prefix}wall_s", "w") as f:
        f.write(f"{wall:.3f}\n")
    return rc, out.decode(errors="replace"), err.decode(errors="replace"), wall


def probe_analyzer(aw, work):
    if not os.path.exists(aw):
        return False, f"{aw}: missing"
    rc, out, err, _ = run([aw, "--help"], dict(os.environ), 30, work, os.path.join(work, "analyzer_probe."))
    if rc != 0:
        ldd = subprocess.run(["ldd", aw], stdout=subprocess.PIPE, stderr=subprocess.STDOUT).stdout.decode(errors="replace")
        missing = [l.strip() for l in ldd.splitlines() if "not found" in l]
        return False, f"`asyncwatch --help` exited {rc}; missing libraries: {missing or '?'}; {err.strip()[:300]}"
    return True, "ok"


def key_times(report, limit=3):
    """The largest blocked totals: 'id@file:line=12.3ms'."""
    fs = sorted(report.get("findings") or [], key=lambda f: -float((f.get("blocked_ns") or {}).get("total") or 0))
    out = []
    for f in fs[:limit]:
        cs = f.get("call_site") or {}
        tot = float((f.get("blocked_ns") or {}).get("total") or 0)
        out.append(f"{f.get('id')}@{os.path.basename(str(cs.get('file')))}:{cs.get('line')}={tot / 1e6:.2f}ms")
    return " ".join(out)


def app_times(stderr, limit=3):
    """The app's own timing lines ('# ...'), shortened."""
    lines = [l[2:].strip() for l in stderr.splitlines() if l.startswith("# ")]
    return " | ".join(lines[:limit])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.environ.get("AW_BUILD", "build"))
    ap.add_argument("--out", default=os.environ.get("OUT") or "validate-out")
    ap.add_argument("--cases", help="comma-separated case names (default: all)")
    ap.add_argument("--linkage", default="shared,static")
    ap.add_argument("--no-python", action="store_true", help="skip the PyTorch and CuPy scripts")
    ap.add_argument("--budget-s", type=float, default=420, help="stop starting new runs after this")
    ap.add_argument("--keep-work", action="store_true")
    ap.add_argument("--via", choices=["auto", "preload"], default="auto",
                    help="preload: LD_PRELOAD + ASYNCWATCH_OUTPUT_DIR even where `asyncwatch run` works "
                         "(the report is still made when the command works)")
    opts = ap.parse_args()
    start = time.monotonic()
    build = os.path.abspath(opts.build)
    out_dir = os.path.abspath(opts.out)
    os.makedirs(out_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="aw-validate-")
    paths = check_app.Paths(build)
    aw_ok, aw_why = probe_analyzer(paths.asyncwatch, work)
    preload_ok = os.path.exists(paths.preload)

    info = [f"date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}", f"host: {platform.node()} {platform.platform()}",
            f"build: {build}", f"asyncwatch command usable: {aw_ok} ({aw_why})",
            f"preload library: {paths.preload} ({'present' if preload_ok else 'MISSING'})"]
    for cmd in (["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm", "--format=csv,noheader"],
                ["nvcc", "--version"]):
        try:
            info.append(" ".join(cmd[:1]) + ": " + subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                                                  timeout=30).stdout.decode().strip().replace("\n", " / "))
        except Exception as e:  # noqa: BLE001
            info.append(f"{cmd[0]}: {e}")
    with open(os.path.join(work, "info.txt"), "w") as f:
        f.write("\n".join(info) + "\n")
    print("\n".join(info), flush=True)

    case_files = sorted(f for f in os.listdir(check_app.EXPECTED_DIR) if f.endswith(".json"))
    if opts.cases:
        want = set(opts.cases.split(","))
        case_files = [f for f in case_files if f[:-5] in want]
    manifest, rows = [], []
    for cf in case_files:
        for linkage in opts.linkage.split(","):
            ctx = check_app.Ctx("gpu", linkage)
            case = check_app.load_case(os.path.join(check_app.EXPECTED_DIR, cf), ctx)
            if linkage == "static" and not case.get("static_build", True):
                continue
            name = f"{case['case']}.{linkage}"
            row = {"case": case["case"], "linkage": linkage, "dir": f"runs/{name}"}
            manifest.append(row)
            if time.monotonic() - start > opts.budget_s:
                row.update(status="SKIPPED", why="time budget")
                continue
            try:
                app = paths.app(case, linkage)
            except check_app.Missing as e:
                row.update(status="MISSING", why=str(e))
                continue
            rd = os.path.join(work, "runs", name)
            os.makedirs(os.path.join(rd, "traces"))
            env = dict(os.environ)
            env.update(case.get("env") or {})
            timeout = min(case.get("timeout_s", 240), 150)
            rc0, out0, err0, wall0 = run([app] + case["_args"], env, timeout, rd, os.path.join(rd, "bare."))
            if aw_ok and opts.via == "auto":
                env1 = paths.tool_env(case.get("env"))
                rc1, out1, err1, wall1 = run([paths.asyncwatch, "run", "-o", os.path.join(rd, "traces"), "--", app] + case["_args"],
                                             env1, timeout, rd, os.path.join(rd, ""))
            elif preload_ok:
                # cwd = the traces folder too: traces land there even if the variable were ignored
                env1 = dict(env, LD_PRELOAD=paths.preload, ASYNCWATCH_OUTPUT_DIR=os.path.join(rd, "traces"))
                rc1, out1, err1, wall1 = run([app] + case["_args"], env1, timeout, os.path.join(rd, "traces"), os.path.join(rd, ""))
            else:
                rc1, out1, err1, wall1 = rc0, out0, err0, 0.0
            report = None
            if aw_ok:
                report, rerr = check_app.report_json(paths, os.path.join(rd, "traces"), paths.tool_env(), case)
                if report is not None:
                    with open(os.path.join(rd, "report.json"), "w") as f:
                        json.dump(report, f, indent=1)
                else:
                    with open(os.path.join(rd, "report.error"), "w") as f:
                        f.write(rerr or "")
            masks = case.get("stdout_mask", [])
            same = rc0 == rc1 and check_app.normalise(out0, masks) in check_app.normalise(out1, masks)
            errors = check_app.compare_stdout(case, out0, rc0)
            if report is not None:
                e, _notes = check_app.compare_report(case, report, ctx)
                errors += e
                status = "PASS" if not errors and same else "FAIL"
            else:
                traces = os.listdir(os.path.join(rd, "traces"))
                status = ("TRACES" if traces else "NO-TRACE") if not errors else "FAIL"
            if not same:
                errors.append(f"output/exit differ: bare rc {rc0}, with asyncwatch rc {rc1}")
            row.update(status=status, errors=errors, bare_rc=rc0, aw_rc=rc1, bare_wall_s=round(wall0, 3),
                       aw_wall_s=round(wall1, 3), key=key_times(report) if report else "", app_times=app_times(err0))
            with open(os.path.join(rd, "check.json"), "w") as f:
                json.dump(row, f, indent=1)
            print(f"{status:8} {name:40} bare {wall0:6.2f}s rc {rc0}  asyncwatch {wall1:6.2f}s rc {rc1}  "
                  f"{row['key'] or row['app_times'][:110]}", flush=True)
            for e in errors[:6]:
                print("         - " + e.replace("\n", "\n           ")[:600], flush=True)

    if not opts.no_python:
        pyd = os.path.join(work, "python")
        os.makedirs(pyd)
        for script in ("torch_copies.py", "cupy_copy.py"):
            if time.monotonic() - start > opts.budget_s + 60:
                manifest.append({"case": script, "linkage": "python", "status": "SKIPPED", "why": "time budget"})
                continue
            base = os.path.join(pyd, script[:-3])
            os.makedirs(base + ".traces")
            env = dict(os.environ, PYTHONUNBUFFERED="1")
            rc0, out0, err0, w0 = run([sys.executable, os.path.join(HERE, script)], env, 150, pyd, base + ".bare.")
            rc1, out1, err1, w1 = (rc0, out0, err0, 0.0)
            if preload_ok:
                env1 = dict(env, LD_PRELOAD=paths.preload, ASYNCWATCH_OUTPUT_DIR=base + ".traces")
                rc1, out1, err1, w1 = run([sys.executable, os.path.join(HERE, script)], env1, 150, base + ".traces", base + ".aw.")
            key = ""
            if aw_ok and os.listdir(base + ".traces"):
                rrc, rout, _e, _ = run([paths.asyncwatch, "report", "--format", "json", base + ".traces"],
                                       paths.tool_env(), 120, pyd, base + ".report.")
                if rrc == 0:
                    try:
                        key = key_times(json.loads(rout), 4)
                    except ValueError:
                        pass
            status = "RAN" if rc0 == 0 and rc1 == 0 else "FAIL"
            row = {"case": script, "linkage": "python", "status": status, "bare_rc": rc0, "aw_rc": rc1,
                   "bare_wall_s": round(w0, 3), "aw_wall_s": round(w1, 3), "key": key,
                   "app_times": " | ".join(l for l in out0.splitlines() if " ms" in l)[:400],
                   "aw_times": " | ".join(l for l in out1.splitlines() if " ms" in l)[:400]}
            manifest.append(row)
            print(f"{status:8} {script:40} bare rc {rc0}, LD_PRELOAD rc {rc1}\n         bare: {row['app_times']}\n"
                  f"         aw:   {row['aw_times']}\n         {key}", flush=True)
            if rc0 or rc1:
                print("         stderr: " + (err1 or err0)[-800:].replace("\n", "\n         "), flush=True)

    with open(os.path.join(work, "manifest.json"), "w") as f:
        json.dump({"info": info, "analyzer_usable": aw_ok, "runs": manifest}, f, indent=1)
    table = ["", f"{'app case':32} {'linkage':8} {'status':8} key blocked times (report) / app timings"]
    for r in manifest:
        table.append(f"{r['case']:32} {r['linkage']:8} {r.get('status', '?'):8} "
                     f"{(r.get('key') or r.get('app_times') or r.get('why') or '')[:150]}")
    counts = {}
    for r in manifest:
        counts[r.get("status", "?")] = counts.get(r.get("status", "?"), 0) + 1
    table.append(f"totals: {counts}; {time.monotonic() - start:.0f} s")
    if not aw_ok:
        table.append("asyncwatch could not run here: traces collected; analyse them on the development machine with\n"
                     "  tar xzf validate.tar.gz && python3 test_apps/apps/check_app.py results validate --build build")
    text = "\n".join(table) + "\n"
    with open(os.path.join(work, "summary.txt"), "w") as f:
        f.write("\n".join(info) + "\n" + text)
    print(text, flush=True)
    shutil.copy(os.path.join(work, "summary.txt"), os.path.join(out_dir, "summary.txt"))
    tar_path = os.path.join(out_dir, "validate.tar.gz")
    with tarfile.open(tar_path, "w:gz") as t:
        t.add(work, arcname="validate")
    size = os.path.getsize(tar_path)
    print(f"packed {tar_path} ({size / 1e6:.1f} MB)" + ("  WARNING: over 16 MiB" if size > 16 << 20 else ""))
    if not opts.keep_work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
