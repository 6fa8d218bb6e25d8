#!/usr/bin/env bash
# PyTorch step time bare, under asyncwatch and under torch.profiler (docs/performance.md).
# Runs on a machine with a GPU and PyTorch (the H200), not on the simulator.
#
# usage: run_torch.sh BUILD_DIR [options] [-- torch_mlp_loop.py options]
#   BUILD_DIR      build tree holding lib/libasyncwatch.so
#   --lib FILE     preload library (default: BUILD_DIR/lib/libasyncwatch.so)
#   --python PY    interpreter [python3]
#   --reps N       interleaved repetitions of every mode [3]
#   --extra-modes  also asyncwatch with ASYNCWATCH_STACKS=all and with ASYNCWATCH_EVIDENCE=off
#   --keep DIR     keep outputs and traces in DIR (default: a temp dir, removed at exit)
# Each repetition runs every mode once, in turn: bare, asyncwatch (default mode), profiler
# (torch.profiler, ProfilerActivity.CUDA). The table gives, per mode, the median step time of each
# repetition, their median and min, and the ratio to bare. Target: asyncwatch at most +5%.
set -euo pipefail

die() { echo "run_torch: $*" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
build=""
lib=""
py=python3
reps=3
extra=""
keep=""
loop_args=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --lib) lib=${2:?}; shift ;;
    --python) py=${2:?}; shift ;;
    --reps) reps=${2:?}; shift ;;
    --extra-modes) extra=1 ;;
    --keep) keep=${2:?}; shift ;;
    --) shift; loop_args=("$@"); break ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1" ;;
    *) [[ -z $build ]] || die "one BUILD_DIR only"; build=$1 ;;
  esac
  shift
done
[[ -n $build ]] || die "usage: run_torch.sh BUILD_DIR [options] (see --help)"
lib=${lib:-$build/lib/libasyncwatch.so}
lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
[[ -f $lib ]] || die "no preload library $lib"

for v in $(compgen -e); do
  case $v in ASYNCWATCH_*) unset "$v" ;; esac
done
unset LD_PRELOAD

if [[ -n $keep ]]; then
  mkdir -p "$keep"; work=$(cd "$keep" && pwd)
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/aw-torch.XXXXXX")
  trap 'rm -rf "$work"' EXIT
fi

modes=(bare asyncwatch profiler)
[[ -z $extra ]] || modes=(bare asyncwatch aw_stacks_all aw_evidence_off profiler)
start=$(date +%s)
: >"$work/results.txt"
for ((r = 1; r <= reps; r++)); do
  for m in "${modes[@]}"; do
    tdir=$work/trace.$m.$r
    mkdir -p "$tdir"
    envs=()
    args=("${loop_args[@]}")
    case $m in
      bare) ;;
      asyncwatch) envs=("LD_PRELOAD=$lib" "ASYNCWATCH_OUTPUT_DIR=$tdir" ASYNCWATCH_QUIET=1) ;;
      aw_stacks_all) envs=("LD_PRELOAD=$lib" "ASYNCWATCH_OUTPUT_DIR=$tdir" ASYNCWATCH_QUIET=1 ASYNCWATCH_STACKS=all) ;;
      aw_evidence_off) envs=("LD_PRELOAD=$lib" "ASYNCWATCH_OUTPUT_DIR=$tdir" ASYNCWATCH_QUIET=1 ASYNCWATCH_EVIDENCE=off) ;;
      profiler) args+=(--profiler) ;;
    esac
    if ! (cd "$tdir" && env "${envs[@]}" "$py" "$here/torch_mlp_loop.py" "${args[@]}") >"$work/$m.$r.out" 2>"$work/$m.$r.err"; then
      echo "run_torch: FAILED: mode $m, repetition $r" >&2
      tail -20 "$work/$m.$r.err" | sed 's/^/  | /' >&2
      exit 1
    fi
    med=$(sed -n 's/.*median_us=\([0-9.]*\).*/\1/p' "$work/$m.$r.out")
    bytes=0
    if compgen -G "$tdir/*.awtrace" >/dev/null; then
      bytes=$(ls -ln "$tdir"/*.awtrace | awk '{s += $5} END {print s + 0}')
    fi
    echo "$m $r $med $bytes" >>"$work/results.txt"
    echo "run_torch: rep $r $m: $(cat "$work/$m.$r.out")"
  done
done

echo ""
echo "== PyTorch MLP step time (16 x 64 MLP, batch 64, SGD, synchronize per step), us; $reps interleaved repetitions"
awk -v modes="${modes[*]}" '
  { v[$1] = v[$1] " " $3; n[$1]++; x[$1, n[$1]] = $3; b[$1] += $4 }
  function median(m,   i, j, t, a, k) {
    k = n[m]; for (i = 1; i <= k; i++) a[i] = x[m, i]
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    mn[m] = a[1]
    return (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
  }
  END {
    nm = split(modes, M, " ")
    for (j = 1; j <= nm; j++) med[M[j]] = median(M[j])
    printf "%-16s %-28s %10s %10s %10s %8s %8s %s\n", "mode", "per-rep median_us", "median_us", "min_us", "added_us", "ratio", "target", "met?"
    for (j = 1; j <= nm; j++) {
      m = M[j]; base = med["bare"]
      tgt = (m == "asyncwatch") ? "+5%" : "-"
      met = (m == "asyncwatch") ? ((med[m] <= base * 1.05) ? "yes" : "NO") : "-"
      printf "%-16s %-28s %10.1f %10.1f %+10.1f %8.3f %8s %s\n", m, substr(v[m], 2), med[m], mn[m], med[m] - base, med[m] / base, tgt, met
    }
    for (j = 1; j <= nm; j++) if (b[M[j]] > 0)
      printf "trace bytes per run (%s): %.0f\n", M[j], b[M[j]] / n[M[j]]
  }' "$work/results.txt"
echo ""
echo "run_torch: table complete ($(( $(date +%s) - start )) s)"
