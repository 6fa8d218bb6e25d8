#!/usr/bin/env bash
# Start-up of a CUDA process, bare vs traced (docs/performance.md): runs test_apps/startup_one_call
# (one CUDA call) N times each way, alternating, on the simulator, and prints the median wall time
# and CPU time (user + sys of all the process's threads, less sensitive to a busy machine) of each
# and the differences. Nothing is asserted about time.
#
# usage: startup.sh BUILD_DIR [--runs N] [--lib LIB]...
#   BUILD_DIR holds lib/libasyncwatch.so, lib/asyncwatch/sim/ and test_apps/startup_one_call
#   --lib     another build of the library (A/B); given more than once, the libraries and the bare
#             process take turns run by run (bare, lib 1, lib 2, ...), so a drift of the machine's
#             speed falls on all of them alike; one line per library, each against the same bare runs
set -euo pipefail
die() { echo "startup: $*" >&2; exit 2; }
build=""; runs=31; libs=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --runs) runs=${2:?}; shift ;;
    --lib) libs+=("${2:?}"); shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1" ;;
    *) build=$1 ;;
  esac
  shift
done
[[ -n $build ]] || die "usage: startup.sh BUILD_DIR [--runs N] [--lib LIB]..."
build=$(cd "$build" && pwd)
[[ ${#libs[@]} -gt 0 ]] || libs=("$build/lib/libasyncwatch.so")
app=$build/test_apps/startup_one_call
sim=$build/lib/asyncwatch/sim
[[ -x $app && -d $sim ]] || die "need $app and $sim"
for l in "${libs[@]}"; do [[ -f $l ]] || die "no library $l"; done
work=$(mktemp -d "${TMPDIR:-/tmp}/aw-startup.XXXXXX")
trap 'rm -rf "$work"' EXIT
for v in $(compgen -e); do case $v in ASYNCWATCH_*) unset "$v" ;; esac; done
unset LD_PRELOAD
python3 - "$app" "$sim" "$work" "$runs" "${libs[@]}" <<'PY'
import os, statistics, subprocess, sys, time
app, sim, work, runs, libs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:]
base = dict(os.environ, LD_LIBRARY_PATH=sim)
ways = [("bare", base)] + [(lib, dict(base, LD_PRELOAD=lib, ASYNCWATCH_OUTPUT_DIR=work, ASYNCWATCH_QUIET="1"))
                           for lib in libs]
t = {name: [] for name, _ in ways}
cpu = {name: [] for name, _ in ways}
for i in range(runs + 2):
    for name, env in ways:
        s = time.perf_counter()
        p = subprocess.Popen([app], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        e = time.perf_counter() - s
        if status != 0: sys.exit("startup: %s run ended with status %d" % (name, status))
        if i >= 2:  # the first two rounds warm the page cache
            t[name].append(e * 1e3)
            cpu[name].append((ru.ru_utime + ru.ru_stime) * 1e3)  # all threads of the process
    for f in os.listdir(work): os.unlink(os.path.join(work, f))
m = lambda v: statistics.median(v)
for name, _ in ways[1:]:
    print("startup: runs=%d wall: bare_median_ms=%.2f traced_median_ms=%.2f added_ms=%.2f (target <= 0.5); "
          "cpu (user+sys): bare_median_ms=%.2f traced_median_ms=%.2f added_ms=%.2f%s"
          % (runs, m(t["bare"]), m(t[name]), m(t[name]) - m(t["bare"]),
             m(cpu["bare"]), m(cpu[name]), m(cpu[name]) - m(cpu["bare"]),
             " lib=%s" % name if len(libs) > 1 else ""))
PY
