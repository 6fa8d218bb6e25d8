#!/usr/bin/env bash
# Start-up of a CUDA process, bare vs traced (docs/performance.md): runs test_apps/startup_one_call
# (one CUDA call) N times each way, alternating, on the simulator, and prints the median wall time
# and CPU time (user + sys of all the process's threads, less sensitive to a busy machine) of each
# and the differences. Nothing is asserted about time.
#
# usage: startup.sh BUILD_DIR [--runs N] [--lib LIB]
#   BUILD_DIR holds lib/libasyncwatch.so, lib/asyncwatch/sim/ and test_apps/startup_one_call
#   --lib     another build of the library (A/B)
set -euo pipefail
die() { echo "startup: $*" >&2; exit 2; }
build=""; runs=31; lib=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --runs) runs=${2:?}; shift ;;
    --lib) lib=${2:?}; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1" ;;
    *) build=$1 ;;
  esac
  shift
done
[[ -n $build ]] || die "usage: startup.sh BUILD_DIR [--runs N] [--lib LIB]"
build=$(cd "$build" && pwd)
lib=${lib:-$build/lib/libasyncwatch.so}
app=$build/test_apps/startup_one_call
sim=$build/lib/asyncwatch/sim
[[ -x $app && -f $lib && -d $sim ]] || die "need $app, $lib and $sim"
work=$(mktemp -d "${TMPDIR:-/tmp}/aw-startup.XXXXXX")
trap 'rm -rf "$work"' EXIT
for v in $(compgen -e); do case $v in ASYNCWATCH_*) unset "$v" ;; esac; done
unset LD_PRELOAD
python3 - "$app" "$lib" "$sim" "$work" "$runs" <<'PY'
import os, statistics, subprocess, sys, time
app, lib, sim, work, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
base = dict(os.environ, LD_LIBRARY_PATH=sim)
traced = dict(base, LD_PRELOAD=lib, ASYNCWATCH_OUTPUT_DIR=work, ASYNCWATCH_QUIET="1")
t = {"bare": [], "traced": []}
cpu = {"bare": [], "traced": []}
for i in range(runs + 2):
    for name, env in (("bare", base), ("traced", traced)):
        s = time.perf_counter()
        p = subprocess.Popen([app], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        e = time.perf_counter() - s
        if status != 0: sys.exit("startup: %s run ended with status %d" % (name, status))
        if i >= 2:  # the first two pairs warm the page cache
            t[name].append(e * 1e3)
            cpu[name].append((ru.ru_utime + ru.ru_stime) * 1e3)  # all threads of the process
    for f in os.listdir(work): os.unlink(os.path.join(work, f))
m = lambda v: statistics.median(v)
print("startup: runs=%d wall: bare_median_ms=%.2f traced_median_ms=%.2f added_ms=%.2f (target <= 0.5); "
      "cpu (user+sys): bare_median_ms=%.2f traced_median_ms=%.2f added_ms=%.2f"
      % (runs, m(t["bare"]), m(t["traced"]), m(t["traced"]) - m(t["bare"]),
         m(cpu["bare"]), m(cpu["traced"]), m(cpu["traced"]) - m(cpu["bare"])))
PY
