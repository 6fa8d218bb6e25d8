#!/usr/bin/env bash
# `asyncwatch report` of two analyzer binaries on one trace, alternated in pairs on one core: CPU
# time (user + sys of the report, /usr/bin/time) and M records per second of it, per format, and
# whether the two reports are byte for byte the same (they must be: docs/performance.md, "Analyzer
# throughput"). Alternating (A B, A B, ...) in the same minutes is what makes a noisy machine's
# figures comparable. With --callgrind, also instructions per record of each binary under
# callgrind (valgrind; deterministic): the whole run / records. Asserts nothing about time.
#
# usage: analyzer_ab.sh --before BIN --after BIN --trace TRACE [--records N] [--pairs N]
#                       [--cpu C] [--formats json,text] [--callgrind]
#   --trace    an .awtrace file; made with --generator GEN (asyncwatch_bench_gen) and --records N
#              (default 20000000) when it does not exist
#   --records  the trace's records (default: TRACE.records, which the generator writes)
#   --pairs    before/after pairs per format (default 5); --cpu the core (default 1)
# Output: one line per run (binary, format, cpu_s, M records/s), then a summary line per format
# with each binary's range and median, the median of the pairs' after/before speed ratios, and
# whether the reports are identical (yes|NO).
set -euo pipefail
die() { echo "analyzer_ab: $*" >&2; exit 2; }
before=""; after=""; trace=""; records=""; pairs=5; cpu=1; formats="json,text"; generator=""; callgrind=0
gen_records=20000000
while [[ $# -gt 0 ]]; do
  case $1 in
    --before) before=${2:?}; shift ;;
    --after) after=${2:?}; shift ;;
    --trace) trace=${2:?}; shift ;;
    --records) records=${2:?}; gen_records=$2; shift ;;
    --pairs) pairs=${2:?}; shift ;;
    --cpu) cpu=${2:?}; shift ;;
    --formats) formats=${2:?}; shift ;;
    --generator) generator=${2:?}; shift ;;
    --callgrind) callgrind=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1" ;;
  esac
  shift
done
[[ -x $before && -x $after && -n $trace ]] || die "usage: analyzer_ab.sh --before BIN --after BIN --trace TRACE"
[[ -x /usr/bin/time ]] || die "/usr/bin/time not found (apt-get install time)"
if [[ ! -f $trace ]]; then
  [[ -x $generator ]] || die "$trace does not exist (give --generator to make it)"
  "$generator" "$trace" --records "$gen_records" >&2
fi
[[ -n $records ]] || records=$(cat "$trace.records" 2>/dev/null) || die "give --records (no $trace.records)"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/analyzer_ab.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
cat "$trace" >/dev/null  # into the page cache before the first timed run

run() {  # run BIN FORMAT OUT -> prints cpu seconds
  /usr/bin/time -f "%U %S" -o "$scratch/time" taskset -c "$cpu" "$1" report --format "$2" "$trace" -o "$3" \
    >/dev/null 2>"$scratch/err" || { cat "$scratch/err" >&2; die "$1 report --format $2 failed"; }
  awk '{printf "%.3f", $1 + $2}' "$scratch/time"
}

IFS=, read -r -a fmts <<<"$formats"
for f in "${fmts[@]}"; do
  a_all=(); b_all=(); ratios=()
  for ((i = 0; i < pairs; ++i)); do
    for which in before after; do
      bin=$before; [[ $which == after ]] && bin=$after
      s=$(run "$bin" "$f" "$scratch/$which.$f")
      rate=$(awk -v r="$records" -v s="$s" 'BEGIN {printf "%.2f", r / s / 1e6}')
      echo "$which format=$f cpu_s=$s m_records_per_s=$rate"
      if [[ $which == before ]]; then
        a_all+=("$rate"); a_rate=$rate
      else
        b_all+=("$rate"); ratios+=("$(awk -v a="$a_rate" -v b="$rate" 'BEGIN {printf "%.3f", b / a}')")
      fi
    done
  done
  range() { printf '%s\n' "$@" | sort -n | sed -n '1p;$p' | paste -sd- ; }
  median() { printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
  same=NO; cmp -s "$scratch/before.$f" "$scratch/after.$f" && same=yes
  echo "summary format=$f before_m_records_per_s=$(range "${a_all[@]}") median $(median "${a_all[@]}")" \
    "after_m_records_per_s=$(range "${b_all[@]}") median $(median "${b_all[@]}")" \
    "after_over_before=$(range "${ratios[@]}") median $(median "${ratios[@]}") reports_identical=$same"
done
if [[ $callgrind == 1 ]]; then
  command -v valgrind >/dev/null || die "valgrind not found"
  for f in "${fmts[@]}"; do
    for which in before after; do
      bin=$before; [[ $which == after ]] && bin=$after
      valgrind --tool=callgrind --callgrind-out-file="$scratch/cg.out" "$bin" report --format "$f" "$trace" \
        -o /dev/null 2>/dev/null
      ir=$(awk '/^summary:/ {print $2; exit}' "$scratch/cg.out")
      echo "callgrind $which format=$f instructions=$ir per_record=$(awk -v i="$ir" -v r="$records" 'BEGIN {printf "%.1f", i / r}')"
    done
  done
fi
