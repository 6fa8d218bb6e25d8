#!/usr/bin/env bash
# A polling loop bare and traced: test_apps/apps/event_query_poll spins on
# cudaEventQuery, then on cudaStreamQuery, until a sleep kernel of fixed length finishes, and prints
# how many not-ready queries it made. With the kernel's length fixed, the iterations traced over the
# iterations bare is what asyncwatch leaves of the loop's speed (the target: at least 0.90). Runs the
# shared-runtime build and, on a GPU, the static one (nvcc's default), rounds interleaved, and prints
# the medians (and each round pair's ratio, and the spread). Asserts nothing.
#
# usage: poll_loop.sh BUILD_DIR [--sim] [--callgrind] [--lib LIB] [--rounds N] [--cycles C] [--env VAR=VALUE]...
#   BUILD_DIR    build tree with lib/libasyncwatch.so and test_apps/event_query_poll[.static]
#   --sim        the shared build on the simulator only (LD_LIBRARY_PATH=BUILD_DIR/lib/asyncwatch/sim)
#   --callgrind  instead of timing: the instructions asyncwatch adds per polled query on the simulator,
#                counted with callgrind (deterministic; valgrind needed), for both ways in: the shared
#                runtime (event_query_poll: cudaEventQuery -> our runtime wrapper -> libcudart ->
#                our cuEventQuery stub -> the driver; collected inside cudaEventQuery and cuEventQuery,
#                the real functions excluded: --toggle-collect on both names) and the static runtime's
#                (test_apps/driver_bench event_query: cuEventQuery called directly, through our driver
#                wrapper as the outer one; 2,000 and 12,000 calls, the difference per call)
#   --lib LIB    another build of the library for the traced runs (A/B of a change)
#   --rounds N   bare/traced pairs per build                                 [7; --sim 3]
#   --cycles C   sleep kernel cycles (C / 1.98e9 s)                           [2e8, ~101 ms; --sim 2e7]
#   --env V=X    an extra variable for the traced runs (repeatable), e.g. ASYNCWATCH_STACKS=none
# On the GPU machine: bash bench/poll_loop.sh build | tee "$OUT/poll_loop.txt"
# The last line is "poll_loop: done" when every run succeeded (exit status 0), else 1.
set -euo pipefail

die() { echo "poll_loop: $*" >&2; exit 2; }
[ $# -ge 1 ] || die "usage: poll_loop.sh BUILD_DIR [--sim] [--rounds N] [--cycles C] [--env VAR=VALUE]..."
build=$(cd "$1" && pwd)
shift
sim="" rounds="" cycles="" callgrind="" lib_arg=""
extra_env=()
while [ $# -gt 0 ]; do
  case "$1" in
    --sim) sim=1 ;;
    --callgrind) callgrind=1 ;;
    --lib) lib_arg=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --cycles) cycles=$2; shift ;;
    --env) extra_env+=("$2"); shift ;;
    *) die "unknown argument $1" ;;
  esac
  shift
done
rounds=${rounds:-$([ -n "$sim" ] && echo 3 || echo 7)}
cycles=${cycles:-$([ -n "$sim" ] && echo 20000000 || echo 200000000)}
lib=${lib_arg:-$build/lib/libasyncwatch.so}
[ -f "$lib" ] || die "no $lib"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/aw-poll.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

if [ -n "$callgrind" ]; then
  command -v valgrind >/dev/null || die "valgrind not found"
  simdir=$build/lib/asyncwatch/sim
  for v in $(compgen -e); do case $v in ASYNCWATCH_*) unset "$v" ;; esac; done
  # Collected Ir of one run (toggles: the function names), its stderr in $tmp/cg.err.
  cg_run() {  # OUT_TAG PROGRAM ARGS... -- TOGGLE...
    local tag=$1 prog=$2 args=() toggles=()
    shift 2
    while [ $# -gt 0 ] && [ "$1" != -- ]; do args+=("$1"); shift; done
    shift
    for f in "$@"; do toggles+=("--toggle-collect=$f"); done
    rm -rf "$tmp/traces" && mkdir -p "$tmp/traces"
    env LD_LIBRARY_PATH="$simdir" LD_PRELOAD="$lib" ASYNCWATCH_OUTPUT_DIR="$tmp/traces" ASYNCWATCH_QUIET=1 \
      ${extra_env[@]+"${extra_env[@]}"} valgrind --tool=callgrind "${toggles[@]}" \
      --callgrind-out-file="$tmp/$tag.cg" "$prog" "${args[@]}" >/dev/null 2>"$tmp/cg.err" ||
      { tail -3 "$tmp/cg.err" >&2; die "$prog under callgrind failed"; }
    awk '/^totals:/ {print $2}' "$tmp/$tag.cg"
  }
  echo "# poll_loop --callgrind: instructions asyncwatch adds per polled query (simulator, $(uname -n))"
  printf '%-34s %12s %10s\n' path calls ir_per_query
  for q in cudaEventQuery cudaStreamQuery; do
    drv=$([ $q = cudaEventQuery ] && echo cuEventQuery || echo cuStreamQuery)
    ir=$(cg_run shared "$build/test_apps/event_query_poll" "${cycles:-20000000}" -- "$q" "$drv")
    n=$(sed -n "s/^# $q: \([0-9]*\) not-ready.*/\1/p" "$tmp/cg.err")
    [ -n "$n" ] || die "no query count from event_query_poll"
    # The other loop's queries are not collected; this loop's ready query is one call more.
    printf '%-34s %12s %10s\n' "shared runtime: $q" $((n + 1)) $((ir / (n + 1)))
  done
  [ -x "$build/test_apps/driver_bench" ] || die "no $build/test_apps/driver_bench"
  a=$(cg_run drv1 "$build/test_apps/driver_bench" event_query 2000 -- cuEventQuery)
  b=$(cg_run drv2 "$build/test_apps/driver_bench" event_query 12000 -- cuEventQuery)
  printf '%-34s %12s %10s\n' "driver (static runtime): cuEventQuery" 10000 $(((b - a) / 10000))
  echo "poll_loop: done"
  exit 0
fi

builds=(event_query_poll)
[ -n "$sim" ] || builds+=(event_query_poll.static)
sim_env=()
[ -n "$sim" ] && sim_env=("LD_LIBRARY_PATH=$build/lib/asyncwatch/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")

failed=0
# One run: prints "EVENT_QUERIES STREAM_QUERIES" (the program's stderr lines), or fails.
run_one() {  # MODE PROGRAM
  local mode=$1 prog=$2 out=$tmp/out.$$ env=("${sim_env[@]}")
  if [ "$mode" = traced ]; then
    mkdir -p "$tmp/traces"
    env+=("LD_PRELOAD=$lib" "ASYNCWATCH_OUTPUT_DIR=$tmp/traces" "${extra_env[@]}")
  fi
  if ! env "${env[@]}" "$prog" "$cycles" >/dev/null 2>"$out"; then
    echo "poll_loop: $mode $prog failed: $(tail -2 "$out")" >&2
    return 1
  fi
  rm -rf "$tmp/traces"
  local e s
  e=$(sed -n 's/^# cudaEventQuery: \([0-9]*\) not-ready.*/\1/p' "$out")
  s=$(sed -n 's/^# cudaStreamQuery: \([0-9]*\) not-ready.*/\1/p' "$out")
  [ -n "$e" ] && [ -n "$s" ] || { echo "poll_loop: no query counts from $prog" >&2; return 1; }
  echo "$e $s"
}

median() { sort -n | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print 0}'; }

echo "# poll_loop: $rounds rounds, kernel $cycles cycles, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -n)"
[ ${#extra_env[@]} -gt 0 ] && echo "# traced with: ${extra_env[*]}"
printf '%-24s %-16s %14s %14s %8s %10s %23s %23s\n' build query bare traced ratio pair-ratio 'bare min-max' 'traced min-max'
for b in "${builds[@]}"; do
  prog=$build/test_apps/$b
  [ -x "$prog" ] || { echo "poll_loop: no $prog (built with the test apps)" >&2; failed=1; continue; }
  : >"$tmp/bare" && : >"$tmp/traced"
  for ((i = 0; i < rounds; i++)); do
    for mode in bare traced; do
      if r=$(run_one "$mode" "$prog"); then echo "$r" >>"$tmp/$mode"; else failed=1; fi
    done
  done
  for col in 1 2; do
    name=$([ $col = 1 ] && echo cudaEventQuery || echo cudaStreamQuery)
    bare=$(cut -d' ' -f$col "$tmp/bare" | median)
    traced=$(cut -d' ' -f$col "$tmp/traced" | median)
    ratio=$(awk -v t="$traced" -v b="$bare" 'BEGIN { if (b > 0) printf "%.3f", t / b; else print "-" }')
    # The spread, and the median of each round's traced over its bare (the rounds interleave, so a
    # host whose speed drifts moves both halves of a pair alike).
    pair=$(paste -d' ' <(cut -d' ' -f$col "$tmp/bare") <(cut -d' ' -f$col "$tmp/traced") |
      awk '$1 > 0 { printf "%.4f\n", $2 / $1 }' | median)
    range() { sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s-%s", lo, hi }'; }
    printf '%-24s %-16s %14s %14s %8s %10s %23s %23s\n' "$b" "$name" "$bare" "$traced" "$ratio" "$pair" \
      "$(cut -d' ' -f$col "$tmp/bare" | range)" "$(cut -d' ' -f$col "$tmp/traced" | range)"
  done
done
[ $failed = 0 ] || exit 1
echo "poll_loop: done"
