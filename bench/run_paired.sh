#!/usr/bin/env bash
# In-process A/B of asyncwatch's recording cost (docs/performance.md): overhead_bench
# --paired under LD_PRELOAD in several processes; each repetition times an item with recording
# paused and on (the control API), so the process-to-process spread of the bare cost cancels out.
#
# usage: run_paired.sh BUILD_DIR [--sim|--shared] [--lib LIB] [--procs N] [--reps N] [--scale F] [--cpu LIST] [--items LIST]
#   BUILD_DIR   build tree with lib/libasyncwatch.so and test_apps/overhead_bench[.static]
#   --sim       the shared-runtime build on the simulator (else the static build, real GPU)
#   --shared    the shared-runtime build on the real GPU (the runtime -> driver wrapper nesting)
#   --lib LIB   this library instead of BUILD_DIR's (an A/B of two libraries in one lease)
#   --procs N   processes [8]; --reps N repetitions per process [40]; --scale F iterations [0.2]
#   --cpu LIST  taskset -c LIST; --items LIST  [launch,copy_pinned_64]
# Prints every process's line, then per item the median over processes of the per-process
# median ratio (recording on / paused) and its range. Exit 0 when every run succeeded and measured
# every item (1 otherwise: e.g. the library did not load, so there was no control API).
set -euo pipefail
die() { echo "run_paired: $*" >&2; exit 2; }
build="" sim="" shared="" lib="" procs=8 reps=40 scale=0.2 cpus="" items=launch,copy_pinned_64
while [[ $# -gt 0 ]]; do
  case $1 in
    --sim) sim=1 ;;
    --shared) shared=1 ;;
    --lib) lib=$(cd "$(dirname "${2:?}")" && pwd)/$(basename "$2") || die "no such library $2"; shift ;;
    --procs) procs=${2:?}; shift ;;
    --reps) reps=${2:?}; shift ;;
    --scale) scale=${2:?}; shift ;;
    --cpu) cpus=${2:?}; shift ;;
    --items) items=${2:?}; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1" ;;
    *) build=$(cd "$1" && pwd) || die "no such build dir $1" ;;
  esac
  shift
done
[[ -n $build ]] || die "usage: run_paired.sh BUILD_DIR (see --help)"
lib=${lib:-$build/lib/libasyncwatch.so}
[[ -f $lib ]] || die "no $lib"
envs=(LD_PRELOAD="$lib" ASYNCWATCH_QUIET=1)
if [[ -n $sim ]]; then
  bench=$build/test_apps/overhead_bench
  envs+=(LD_LIBRARY_PATH="$build/lib/asyncwatch/sim")
elif [[ -n $shared ]]; then
  bench=$build/test_apps/overhead_bench
else
  bench=$build/test_apps/overhead_bench.static
fi
[[ -x $bench ]] || die "no $bench"
pin=()
[[ -z $cpus ]] || pin=(taskset -c "$cpus")
work=$(mktemp -d "${TMPDIR:-/tmp}/aw-paired.XXXXXX")
trap 'rm -rf "$work"' EXIT
for ((i = 1; i <= procs; i++)); do
  (cd "$work" && env "${envs[@]}" ASYNCWATCH_OUTPUT_DIR="$work" "${pin[@]}" "$bench" --paired --only "$items" \
     --reps "$reps" --scale "$scale" --warmup-ms 300) | tee -a "$work/out.txt" || { echo "run_paired: run $i failed" >&2; exit 1; }
  rm -f "$work"/*.awtrace
done
echo ""
echo "== recording on / paused, median over $procs processes of each process's median ratio [min, max]"
awk '/^paired item=/ {
       for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
       it = f["item"]; n[it]++; r[it, n[it]] = f["ratio_median"]; d[it, n[it]] = f["on_median_ns"] - f["off_median_ns"]
     }
     function med(a, it, k,   v, i, j, x) {
       for (i = 1; i <= k; i++) v[i] = a[it, i]
       for (i = 2; i <= k; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
       lo = v[1]; hi = v[k]
       return (k % 2) ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
     }
     END {
       for (it in n) {
         m = med(r, it, n[it]); rl = lo; rh = hi; a = med(d, it, n[it])
         printf "%-20s ratio %.4f [%.4f, %.4f]  added %+.0f ns (median)\n", it, m, rl, rh, a
       }
     }' "$work/out.txt"
for it in ${items//,/ }; do
  grep -q "^paired item=$it " "$work/out.txt" || { echo "run_paired: no paired figures for $it" >&2; exit 1; }
done
