#!/usr/bin/env bash
# The traced process's memory and trace size on long runs (docs/performance.md): runs
# test_apps/long_run on the simulator bare and traced, in full mode, in summary mode
# (ASYNCWATCH_SUMMARY=1) and as a flight recorder (ASYNCWATCH_TRACE_LIMIT=--limit), and prints, for
# each item, the peak resident memory (VmHWM) of both, the growth traced over bare, and the trace's
# size; then, unless --no-findings, whether the loop's findings in summary mode and in the flight
# recorder are those of full mode (bench/summary_compare.py on a loop of --calls / 10 calls, the
# stack threshold out of reach: a loaded machine makes the simulator's launches block at random,
# which changes the findings of two runs whatever the mode). Nothing is asserted (the
# ctest only checks that it ran).
#
# usage: long_run.sh BUILD_DIR [--calls N] [--threads N] [--limit SIZE] [--lib LIB] [--no-findings]
#   --calls    calls of the 4-thread loop (launches, pinned and pageable 64-byte copies, syncs); 5000000
#   --threads  short-lived threads, one 64-byte copy each (one after another, and 16 at a time); 5000
#   --limit    the flight recorder's SIZE (ASYNCWATCH_TRACE_LIMIT); 64M
#   --lib      another build of the library (the figures before a change)
set -euo pipefail
die() { echo "long_run: $*" >&2; exit 2; }
build=""; calls=5000000; threads=5000; limit=64M; lib=""; findings=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --calls) calls=${2:?}; shift ;;
    --threads) threads=${2:?}; shift ;;
    --limit) limit=${2:?}; shift ;;
    --lib) lib=${2:?}; shift ;;
    --no-findings) findings="" ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1" ;;
    *) build=$1 ;;
  esac
  shift
done
[[ -n $build ]] || die "usage: long_run.sh BUILD_DIR [--calls N] [--threads N] [--lib LIB]"
build=$(cd "$build" && pwd)
app=$build/test_apps/long_run
lib=${lib:-$build/lib/libasyncwatch.so}
sim=$build/lib/asyncwatch/sim
[[ -x $app && -f $lib && -d $sim ]] || die "need $app, $lib and $sim"
work=$(mktemp -d "${TMPDIR:-/tmp}/aw-long-run.XXXXXX")
trap 'rm -rf "$work"' EXIT
for v in $(compgen -e); do case $v in ASYNCWATCH_SIM_*) ;; ASYNCWATCH_*) unset "$v" ;; esac; done
unset LD_PRELOAD
export LD_LIBRARY_PATH=$sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
field() { sed -n "s/.* $1 \([0-9-]*\).*/\1/p" <<<" $2"; }
one() {  # item mode(0: full, 1: summary, flight) args...
  local name=$1 mode=$2; shift 2
  local bare traced size disk
  local -a env=(ASYNCWATCH_SUMMARY=$mode)
  [[ $mode == flight ]] && env=(ASYNCWATCH_TRACE_LIMIT=$limit)
  bare=$("$app" "$@")
  rm -f "$work"/*.awtrace
  traced=$(env LD_PRELOAD="$lib" ASYNCWATCH_OUTPUT_DIR="$work" ASYNCWATCH_QUIET=1 "${env[@]}" "$app" "$@")
  size=$(du -cb "$work"/*.awtrace | tail -1 | cut -f1)          # the file's length
  disk=$(du -ck "$work"/*.awtrace | tail -1 | cut -f1)          # what it holds on disk (holes left out)
  local hb ht
  hb=$(field hwm_kib "$bare"); ht=$(field hwm_kib "$traced")
  printf '%-20s calls %-9s peak RSS bare %7.1f MiB traced %7.1f MiB growth %6.1f MiB  trace %8.1f MiB (on disk %8.1f MiB)  on disk+growth %8.1f MiB\n' \
    "$name" "$(field calls "$traced")" "$(bc -l <<<"$hb/1024")" "$(bc -l <<<"$ht/1024")" \
    "$(bc -l <<<"($ht-$hb)/1024")" "$(bc -l <<<"$size/1048576")" "$(bc -l <<<"$disk/1024")" \
    "$(bc -l <<<"($disk+$ht-$hb)/1024")"
}
one "loop, 4 threads" 0 loop "$calls" 4
one "summary: loop" 1 loop "$calls" 4
one "flight $limit: loop" flight loop "$calls" 4
one "short-lived threads" 0 threads "$threads"
one "summary: threads" 1 threads "$threads"
one "flight $limit: threads" flight threads "$threads"
one "threads, 16 at a time" 0 threads "$threads" 16
one "summary: 16 at a time" 1 threads "$threads" 16
one "flight: 16 at a time" flight threads "$threads" 16
if [[ -n $findings ]]; then
  echo "findings, summary vs full (loop of $(( calls / 10 )) calls):"
  python3 "$(dirname "$0")/summary_compare.py" "$build" --min-blocked-us 50 -- "$app" loop $(( calls / 10 )) 4 | sed 's/^/  /' || true
  echo "findings, flight recorder ($limit) vs full (the same loop):"
  python3 "$(dirname "$0")/summary_compare.py" "$build" --min-blocked-us 50 --trace-limit "$limit" -- "$app" loop $(( calls / 10 )) 4 | sed 's/^/  /' || true
fi
