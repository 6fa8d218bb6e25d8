#!/usr/bin/env python3
"""A polling loop folds into one record per run of results (preload/src/interpose/query_fold.h).

event_query_poll spins on cudaEventQuery, then on cudaStreamQuery, until a sleep kernel ends and
prints how many not-ready queries it made. Traced on the simulator, each loop's not-ready queries
must be one Sync record whose `repeat` is that count (nothing else is written between them), its
ready query a record of its own; under ASYNCWATCH_STACKS=all (the folding path off) every query is
a record of its own, the same count in all.

usage: query_fold_test.py --build BUILD_DIR
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile


def run(build, env_extra):
    work = tempfile.mkdtemp(prefix="query-fold-", dir=build)
    try:
        env = dict(os.environ)
        for k in list(env):
            if (k.startswith("ASYNCWATCH_") and not k.startswith("ASYNCWATCH_SIM_")) or k == "LD_PRELOAD":
                del env[k]
        env.update(LD_LIBRARY_PATH=os.path.join(build, "lib", "asyncwatch", "sim"),
                   LD_PRELOAD=os.path.join(build, "lib", "libasyncwatch.so"), ASYNCWATCH_OUTPUT_DIR=work,
                   ASYNCWATCH_QUIET="1", **env_extra)
        # 8e6 cycles (~4 ms) a sleep kernel: with 1 ms, a loaded 2-core machine sometimes ran the kernel
        # out before the first query (the program's "idle at once" check).
        p = subprocess.run([os.path.join(build, "test_apps", "event_query_poll"), "8000000"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
        if p.returncode != 0:
            sys.exit(f"query_fold_test: event_query_poll failed ({p.returncode}): {p.stderr[-400:]}")
        counts = {m.group(1): int(m.group(2)) for m in re.finditer(r"# (cuda\w+Query): (\d+) not-ready", p.stderr)}
        traces = [os.path.join(work, f) for f in os.listdir(work) if f.endswith(".awtrace")]
        if len(traces) != 1:
            sys.exit(f"query_fold_test: expected one trace, found {traces}")
        dump = subprocess.run([os.path.join(build, "bin", "asyncwatch"), "dump", traces[0]], stdout=subprocess.PIPE,
                              universal_newlines=True, check=True).stdout
    finally:
        shutil.rmtree(work, ignore_errors=True)
    records = {}  # api -> [(result, repeat)]
    for line in dump.splitlines():
        m = re.search(r" Sync api=(cuda\w+Query) .* result=(\d+) .*?(?: repeat=(\d+))?$", line)
        if m:
            records.setdefault(m.group(1), []).append((int(m.group(2)), int(m.group(3) or 1)))
    return counts, records


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    build = os.path.abspath(ap.parse_args().build)
    errors = []
    for label, env, folded in (("default", {}, True), ("ASYNCWATCH_STACKS=all", {"ASYNCWATCH_STACKS": "all"}, False)):
        counts, records = run(build, env)
        for api in ("cudaEventQuery", "cudaStreamQuery"):
            n = counts.get(api)
            recs = records.get(api, [])
            not_ready = [r for r in recs if r[0] != 0]
            ready = [r for r in recs if r[0] == 0]
            if not n:
                errors.append(f"{label}: event_query_poll printed no {api} count")
                continue
            if sum(rep for _, rep in not_ready) != n:
                errors.append(f"{label}: {api}: {n} not-ready queries, the records count "
                              f"{sum(rep for _, rep in not_ready)}")
            want_records = 1 if folded else n
            if len(not_ready) != want_records:
                errors.append(f"{label}: {api}: {len(not_ready)} not-ready records, expected {want_records}")
            if [rep for _, rep in ready] != [1]:
                errors.append(f"{label}: {api}: the ready query as {ready}, expected one record of its own")
        print(f"{label}: {counts}; records " +
              ", ".join(f"{a}: {len(r)}" for a, r in sorted(records.items())))
    for e in errors:
        print("FAIL:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
