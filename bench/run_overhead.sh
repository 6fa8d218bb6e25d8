#!/usr/bin/env bash
# Runs overhead_bench side by side with and without asyncwatch and prints the overhead table
# (docs/performance.md).
#
# usage: run_overhead.sh BUILD_DIR [--sim] [--quick] [options]
#   BUILD_DIR        build tree holding lib/libasyncwatch.so, test_apps/overhead_bench[.static] and,
#                    with --sim, lib/asyncwatch/sim/
#   --sim            run the shared-runtime build against the simulator (LD_LIBRARY_PATH=sim dir,
#                    every mode); without it the static-runtime build runs on the real GPU
#   --quick          few iterations (CI: about 10 s on the simulator); prints figures, asserts nothing
#   --rounds N       interleaved rounds (each round runs every mode once, in turn)   [5; quick 2]
#   --reps N         repetitions of every item inside one process                    [3; quick 2]
#   --scale F        iteration count multiplier of the timed runs         [1; --sim 0.1; quick 0.01]
#   --warmup-ms MS   launches and copies before anything is timed, per process      [500; quick 20]
#   --modes LIST     comma-separated subset of bare,default,stacks_all,evidence_off,shm
#                    [bare,default,stacks_all,evidence_off]
#   --bench FILE     benchmark executable (default: BUILD_DIR/test_apps/overhead_bench[.static])
#   --lib FILE       preload library (default: BUILD_DIR/lib/libasyncwatch.so)
#   --sim-dir DIR    simulator directory (default: BUILD_DIR/lib/asyncwatch/sim)
#   --items LIST     time only these benchmark items (overhead_bench --only)           [all]
#   --variant NAME=LIB  one more mode NAME: the default mode with another build of the library
#                    (repeatable; for A/B tests of a change to the hot path in one run)
#   --no-trace-items skip the per-item trace size runs and the per-thread memory runs
#   --cpu LIST       run every benchmark process under `taskset -c LIST` (less migration noise)
#   --keep DIR       keep raw outputs and traces in DIR (default: a temp dir, removed at exit)
#
# Modes: bare; default (LD_PRELOAD=libasyncwatch.so); stacks_all (+ ASYNCWATCH_STACKS=all);
# evidence_off (+ ASYNCWATCH_EVIDENCE=off); disabled (library loaded, ASYNCWATCH_DISABLE=1:
# what interposition alone costs); shm (the default mode with its trace on /dev/shm:
# what the file-backed mapping's page faults cost). Exit status 0 when every run succeeded (whatever the
# figures), 1 when a run failed, 2 on usage errors. The last line is "run_overhead: table complete"
# on success.
set -euo pipefail

die() { echo "run_overhead: $*" >&2; exit 2; }

build=""
sim=""
quick=""
rounds=""
reps=""
scale=""
warmup=""
modes="bare,default,stacks_all,evidence_off"
bench=""
lib=""
simdir=""
trace_items=1
keep=""
cpus=""
items_opt=()
declare -A variant_lib=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --sim) sim=1 ;;
    --quick) quick=1 ;;
    --rounds) rounds=${2:?}; shift ;;
    --reps) reps=${2:?}; shift ;;
    --scale) scale=${2:?}; shift ;;
    --warmup-ms) warmup=${2:?}; shift ;;
    --modes) modes=${2:?}; shift ;;
    --bench) bench=${2:?}; shift ;;
    --lib) lib=${2:?}; shift ;;
    --sim-dir) simdir=${2:?}; shift ;;
    --no-trace-items) trace_items="" ;;
    --cpu) cpus=${2:?}; shift ;;
    --items) items_opt=(--only "${2:?}"); shift ;;
    --variant) v=${2:?}; [[ $v == *=* ]] || die "--variant NAME=LIB"; variant_lib[${v%%=*}]=$(cd "$(dirname "${v#*=}")" && pwd)/$(basename "${v#*=}"); shift ;;
    --keep) keep=${2:?}; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1" ;;
    *) [[ -z $build ]] || die "one BUILD_DIR only"; build=$1 ;;
  esac
  shift
done
[[ -n $build ]] || die "usage: run_overhead.sh BUILD_DIR [--sim] [--quick] (see --help)"
build=$(cd "$build" && pwd) || die "no such build dir"
if [[ -n $quick ]]; then
  rounds=${rounds:-2}; reps=${reps:-2}; scale=${scale:-0.01}; warmup=${warmup:-20}
else
  rounds=${rounds:-5}; reps=${reps:-3}; warmup=${warmup:-500}
  # The simulator drains a stream at ~0.1 ms per operation (it sleeps per operation), so it gets
  # a tenth of the H200's iterations.
  if [[ -n $sim ]]; then scale=${scale:-0.1}; else scale=${scale:-1}; fi
fi
if [[ -z $bench ]]; then
  if [[ -n $sim ]]; then bench=$build/test_apps/overhead_bench; else bench=$build/test_apps/overhead_bench.static; fi
fi
lib=${lib:-$build/lib/libasyncwatch.so}
simdir=${simdir:-$build/lib/asyncwatch/sim}
[[ -x $bench ]] || die "no benchmark executable $bench"
abspath() { if [[ -e $1 ]]; then echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; else echo "$1"; fi; }
bench=$(abspath "$bench")
lib=$(abspath "$lib")
simdir=$(abspath "$simdir")
stats_tool=$(dirname "$bench")/bench_trace_stats
IFS=, read -r -a mode_list <<<"$modes"
need_lib=""
for m in "${mode_list[@]}"; do
  case $m in
    bare) ;;
    default|stacks_all|evidence_off|shm|disabled) need_lib=1 ;;
    *) [[ -n ${variant_lib[$m]:-} ]] || die "unknown mode $m"
       [[ -f ${variant_lib[$m]} ]] || die "no library ${variant_lib[$m]} for variant $m" ;;
  esac
done
[[ -z $need_lib || -f $lib ]] || die "no preload library $lib"
[[ -z $sim || -d $simdir ]] || die "no simulator directory $simdir"

# The runs' environment is ours alone: no inherited asyncwatch settings or preloads (the
# simulator's own tunables, ASYNCWATCH_SIM_*, pass through).
for v in $(compgen -e); do
  case $v in ASYNCWATCH_SIM_*) ;; ASYNCWATCH_*) unset "$v" ;; esac
done
unset LD_PRELOAD

if [[ -n $keep ]]; then
  mkdir -p "$keep"; work=$(cd "$keep" && pwd)
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/aw-overhead.XXXXXX")
  trap 'rm -rf "$work"' EXIT
fi
start=$(date +%s.%N)
nruns=0
# Mode shm: the default mode with the trace on tmpfs (/dev/shm), which isolates what the page
# faults of a file-backed shared mapping cost. Its traces are moved next to the others after the run.
shm_root=""
if [[ ,$modes, == *,shm,* ]]; then
  shm_root=$(mktemp -d /dev/shm/aw-overhead.XXXXXX) || die "no /dev/shm for mode shm"
  trap 'rm -rf "$work" "$shm_root"' EXIT
  [[ -z $keep ]] || trap 'rm -rf "$shm_root"' EXIT
fi

# run_bench MODE NAME ARGS...: runs the benchmark in MODE; stdout in $work/NAME.out, the trace (if
# any) in $work/NAME.trace/.
run_bench() {
  local mode=$1 name=$2
  shift 2
  local tdir=$work/$name.trace
  mkdir -p "$tdir"
  local -a envs=()
  [[ -z $sim ]] || envs+=("LD_LIBRARY_PATH=$simdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  case $mode in
    bare) ;;
    default) envs+=("LD_PRELOAD=$lib" "ASYNCWATCH_OUTPUT_DIR=$tdir" ASYNCWATCH_QUIET=1) ;;
    stacks_all) envs+=("LD_PRELOAD=$lib" "ASYNCWATCH_OUTPUT_DIR=$tdir" ASYNCWATCH_QUIET=1 ASYNCWATCH_STACKS=all) ;;
    evidence_off) envs+=("LD_PRELOAD=$lib" "ASYNCWATCH_OUTPUT_DIR=$tdir" ASYNCWATCH_QUIET=1 ASYNCWATCH_EVIDENCE=off) ;;
    disabled) envs+=("LD_PRELOAD=$lib" "ASYNCWATCH_OUTPUT_DIR=$tdir" ASYNCWATCH_QUIET=1 ASYNCWATCH_DISABLE=1) ;;
    shm) mkdir -p "$shm_root/$name"
         envs+=("LD_PRELOAD=$lib" "ASYNCWATCH_OUTPUT_DIR=$shm_root/$name" ASYNCWATCH_QUIET=1) ;;
    *) envs+=("LD_PRELOAD=${variant_lib[$mode]}" "ASYNCWATCH_OUTPUT_DIR=$tdir" ASYNCWATCH_QUIET=1) ;;
  esac
  nruns=$((nruns + 1))
  # cwd = the trace directory: a trace written to "." lands there too.
  local -a pin=()
  [[ -z $cpus ]] || pin=(taskset -c "$cpus")
  if ! (cd "$tdir" && env "${envs[@]}" "${pin[@]}" "$bench" "$@") >"$work/$name.out" 2>"$work/$name.err"; then
    echo "run_overhead: FAILED: mode $mode: $bench $*" >&2
    sed 's/^/  | /' "$work/$name.err" | tail -20 >&2
    exit 1
  fi
}

# "FILE_BYTES RECORD_BYTES" of the trace files of one run: the size `ls -l` shows, and the bytes
# of the records in them (bench_trace_stats; "-" without it). A file grows in 64 KiB blocks per
# thread and is cut to the blocks used at a clean exit, so its size is coarse for short runs.
trace_bytes() {
  local dir=$1
  if ! compgen -G "$dir/*.awtrace" >/dev/null; then
    echo "0 0"
    return
  fi
  local fb rb="-"
  fb=$(ls -ln "$dir"/*.awtrace | awk '{s += $5} END {print s + 0}')
  if [[ -x $stats_tool ]]; then
    rb=$("$stats_tool" "$dir"/*.awtrace | sed -n 's/.* record_bytes=\([0-9]*\).*/\1/p' | awk '{s += $1} END {print s + 0}')
  fi
  echo "$fb $rb"
}

echo "run_overhead: $bench"
echo "run_overhead: modes ${modes}; ${rounds} rounds x ${reps} reps, scale ${scale}, warm-up ${warmup} ms${sim:+; simulator $simdir}${cpus:+; cpus $cpus}"
[[ -z $need_lib ]] || echo "run_overhead: preload $lib"

# ---- timed runs: rounds of every mode in turn -----------------------------------------------
: >"$work/samples.txt"
: >"$work/rounds.txt"
: >"$work/totals.txt"
for ((r = 1; r <= rounds; r++)); do
  for m in "${mode_list[@]}"; do
    run_bench "$m" "timed.$m.$r" --reps "$reps" --scale "$scale" --warmup-ms "$warmup" "${items_opt[@]}"
    if [[ $m == shm ]]; then mv "$shm_root/timed.$m.$r"/*.awtrace "$work/timed.$m.$r.trace/" 2>/dev/null || true; fi
    awk -v mode="$m" '
      /^item=/ {
        item = ""; samples = ""
        for (i = 1; i <= NF; i++) {
          split($i, kv, "=")
          if (kv[1] == "item") item = kv[2]
          if (kv[1] == "samples") samples = kv[2]
        }
        n = split(samples, s, ",")
        for (i = 1; i <= n; i++) print mode, item, s[i]
        # Median of this process alone, for the paired per-round ratios.
        for (i = 1; i <= n; i++) v[i] = s[i] + 0
        for (i = 2; i <= n; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
        med = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
        print mode, item, round, med >> rounds_file
      }' round="$r" rounds_file="$work/rounds.txt" "$work/timed.$m.$r.out" >>"$work/samples.txt"
    calls=$(sed -n 's/^total calls=\([0-9]*\).*/\1/p' "$work/timed.$m.$r.out")
    rss=$(sed -n 's/^total .*rss_kb=\([0-9-]*\).*/\1/p' "$work/timed.$m.$r.out")
    echo "$m $(trace_bytes "$work/timed.$m.$r.trace") ${calls:-0} ${rss:--1}" >>"$work/totals.txt"
    [[ -n $keep ]] || rm -f "$work/timed.$m.$r.trace"/*.awtrace  # ~60 MB each on the H200
  done
done

# ---- the tables ---------------------------------------------------------------------------------
# stat MODE ITEM -> "median min n" over every repetition of every round.
sort -k1,1 -k2,2 -k3,3g "$work/samples.txt" | awk '
  function flush() {
    if (n == 0) return
    med = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    print key, med, v[1], n
  }
  { k = $1 " " $2; if (k != key) { flush(); key = k; n = 0 } v[++n] = $3 }
  END { flush() }' >"$work/stats.txt"

items=$(awk '/^item=/ { sub(/^item=/, "", $1); print $1 }' "$work/timed.${mode_list[0]}.1.out")
print_table() {  # COLUMN (2 = median, 3 = min) TITLE
  awk -v col="$1" -v title="$2" -v modes="$modes" -v items="$items" -v sim="$sim" '
    BEGIN {
      nm = split(modes, M, ","); ni = split(items, I, "\n")
      target["launch"] = 0.05; target["copy_pinned_64"] = 0.10
    }
    { val[$1 " " $2] = (col == 2) ? $3 : $4; reps[$1] = $5 }
    END {
      print ""
      print title
      hdr = sprintf("%-20s", "item")
      for (j = 1; j <= nm; j++) {
        if (M[j] == "bare") hdr = hdr sprintf(" %10s", "bare_ns")
        else hdr = hdr sprintf(" | %13s %9s %6s", M[j] "_ns", "added_ns", "ratio")
      }
      hdr = hdr sprintf(" | %-9s %s", "target", "met?")
      print hdr
      for (i = 1; i <= ni; i++) {
        it = I[i]; if (it == "") continue
        b = val["bare " it]
        line = sprintf("%-20s", it)
        for (j = 1; j <= nm; j++) {
          x = val[M[j] " " it]
          if (M[j] == "bare") { line = line sprintf(" %10.1f", x); continue }
          if (b != "" && b > 0)
            line = line sprintf(" | %13.1f %+9.1f %6.3f", x, x - b, x / b)
          else
            line = line sprintf(" | %13.1f %9s %6s", x, "-", "-")
        }
        if (it in target) {
          d = val["default " it]
          met = (b == "" || d == "") ? "-" : ((d <= b * (1 + target[it])) ? "yes" : "NO")
          line = line sprintf(" | %-9s %s", sprintf("+%d%%", target[it] * 100), met)
        } else line = line sprintf(" | %-9s %s", "-", "-")
        print line
      }
    }' "$work/stats.txt"
}
n_samples=$((rounds * reps))
print_table 2 "== ns per call, median of $n_samples repetitions ($rounds interleaved rounds x $reps); target and met? judge the default mode"
print_table 3 "== ns per call, min of $n_samples repetitions"

# Paired ratios: the process-to-process spread of the bare cost is as large as the overhead, so
# each round's mode is compared with the bare run of the same round (run back to back), and the
# table gives the median and quartiles of those per-round ratios and how many rounds met the target.
if [[ ,$modes, == *,bare,* && $rounds -ge 2 ]]; then
  echo ""
  echo "== paired per-round ratios (mode's median / bare's median in the same round; $rounds rounds): median [q1, q3], rounds within target"
  awk -v modes="$modes" -v items="$items" '
    function sort_(a, n,   i, j, x) { for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x } }
    function q(a, n, f,   p, lo) { p = 1 + (n - 1) * f; lo = int(p); return (lo >= n) ? a[n] : a[lo] + (p - lo) * (a[lo + 1] - a[lo]) }
    BEGIN { nm = split(modes, M, ","); ni = split(items, I, "\n"); target["launch"] = 0.05; target["copy_pinned_64"] = 0.10 }
    { v[$1 " " $2 " " $3] = $4; if ($3 > nr) nr = $3 }
    END {
      hdr = sprintf("%-20s", "item")
      for (j = 1; j <= nm; j++) if (M[j] != "bare") hdr = hdr sprintf(" | %-30s", M[j])
      print hdr
      for (i = 1; i <= ni; i++) {
        it = I[i]; if (it == "") continue
        line = sprintf("%-20s", it)
        for (j = 1; j <= nm; j++) {
          m = M[j]; if (m == "bare") continue
          n = 0; ok = 0
          for (r = 1; r <= nr; r++) {
            b = v["bare " it " " r]; x = v[m " " it " " r]
            if (b == "" || x == "" || b <= 0) continue
            a[++n] = x / b
            if ((it in target) && x / b <= 1 + target[it]) ok++
          }
          if (n == 0) { line = line sprintf(" | %-30s", "-"); continue }
          sort_(a, n)
          cell = sprintf("%.3f [%.3f, %.3f]", q(a, n, 0.5), q(a, n, 0.25), q(a, n, 0.75))
          if (it in target) cell = cell sprintf(" %d/%d", ok, n)
          line = line sprintf(" | %-30s", cell)
        }
        print line
      }
    }' "$work/rounds.txt"
fi

if [[ -n $sim ]]; then
  # Simulator bare costs are not the H200's: what carries over is the added time per call.
  awk '
    { val[$1 " " $2] = $3 }
    END {
      h200["launch"] = 3300; h200["copy_pinned_64"] = 1400
      t["launch"] = 0.05; t["copy_pinned_64"] = 0.10
      print ""
      print "== simulator: default-mode added ns (median) projected on the H200 bare cost"
      printf "%-20s %10s %10s %9s %8s %s\n", "item", "added_ns", "h200_ns", "ratio", "target", "met?"
      for (it in h200) {
        if (!(("default " it) in val) || !(("bare " it) in val)) continue
        a = val["default " it] - val["bare " it]
        r = (h200[it] + a) / h200[it]
        printf "%-20s %+10.1f %10d %9.3f %8s %s\n", it, a, h200[it], r, sprintf("+%d%%", t[it] * 100), (r <= 1 + t[it]) ? "yes" : "NO"
      }
    }' "$work/stats.txt"
fi

# ---- trace bytes per call and memory -------------------------------------------------------
if [[ -n $need_lib ]]; then
  echo ""
  echo "== trace bytes per call, timed runs (trace / CUDA calls the benchmark made; file = ls -l size, records = record bytes in it)"
  awk -v modes="$modes" '
    { fb[$1] += $2; rb[$1] += ($3 == "-" ? 0 : $3); norb[$1] = norb[$1] || ($3 == "-")
      calls[$1] += $4; nr[$1]++; rsum[$1] += $5 }
    END {
      printf "%-14s %12s %12s %10s %16s %17s %14s\n", "mode", "file_bytes", "record_bytes", "calls",
             "file_bytes/call", "record_bytes/call", "rss_kb(mean)"
      nm = split(modes, M, ",")
      for (j = 1; j <= nm; j++) {
        m = M[j]; if (!(m in nr)) continue
        aw = (m != "bare" && calls[m] > 0)
        printf "%-14s %12d %12s %10d %16s %17s %14.0f\n", m, fb[m], norb[m] ? "-" : rb[m], calls[m],
               aw ? sprintf("%.1f", fb[m] / calls[m]) : "-",
               (aw && !norb[m]) ? sprintf("%.1f", rb[m] / calls[m]) : "-", rsum[m] / nr[m]
      }
    }' "$work/totals.txt"
fi

if [[ -n $need_lib && -n $trace_items ]]; then
  # One process per item and mode: (trace bytes - bytes of a run that times nothing) / item calls.
  if [[ -n $quick ]]; then iscale=$scale; else iscale=$(awk -v s="$scale" 'BEGIN { print s / 4 }'); fi
  echo ""
  if [[ -x $stats_tool ]]; then col=2; what="record bytes"; else col=1; what="ls -l bytes, +-65536/calls"; fi
  echo "== trace bytes per call by item ($what; one run per item, scale $iscale, minus a run with no items)"
  aw_modes=()
  for m in "${mode_list[@]}"; do [[ $m == bare ]] || aw_modes+=("$m"); done
  # --quick: the default mode only (the simulator drains a stream slowly: ~0.1 ms per operation).
  if [[ -n $quick ]]; then
    for m in "${aw_modes[@]}"; do [[ $m != default ]] || aw_modes=(default); done
  fi
  hdr=$(printf "%-20s" item)
  for m in "${aw_modes[@]}"; do hdr+=$(printf " %16s" "$m"); done
  echo "$hdr"
  declare -A base
  for m in "${aw_modes[@]}"; do
    run_bench "$m" "items.$m.none" --only none --reps 1 --warmup-ms 0
    base[$m]=$(trace_bytes "$work/items.$m.none.trace" | cut -d' ' -f$col)
  done
  for it in $items; do
    line=$(printf "%-20s" "$it")
    for m in "${aw_modes[@]}"; do
      run_bench "$m" "items.$m.$it" --only "$it" --reps 1 --scale "$iscale" --warmup-ms 0
      b=$(trace_bytes "$work/items.$m.$it.trace" | cut -d' ' -f$col)
      c=$(sed -n 's/^item=.* calls=\([0-9]*\).*/\1/p' "$work/items.$m.$it.out")
      line+=$(awk -v b="$b" -v z="${base[$m]}" -v c="${c:-0}" 'BEGIN { printf " %16s", (c > 0 ? sprintf("%.1f", (b - z) / c) : "-") }')
    done
    echo "$line"
  done

  echo ""
  echo "== resident memory per thread that made CUDA calls (16 threads alive, VmRSS delta / 16)"
  printf "%-14s %14s %10s\n" mode kb_per_thread added_kb
  bare_kb=""
  for m in bare "${aw_modes[@]}"; do
    run_bench "$m" "mem.$m" --only thread_mem --reps 1 --warmup-ms 0
    kb=$(sed -n 's/^mem=thread .*kb_per_thread=\([0-9.-]*\).*/\1/p' "$work/mem.$m.out")
    [[ $m != bare ]] || bare_kb=$kb
    printf "%-14s %14s %10s\n" "$m" "$kb" "$(awk -v a="$kb" -v b="$bare_kb" 'BEGIN { print (b == "" ? "-" : sprintf("%+.1f", a - b)) }')"
  done
fi

echo ""
echo "run_overhead: table complete ($nruns runs, $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }') s)"
