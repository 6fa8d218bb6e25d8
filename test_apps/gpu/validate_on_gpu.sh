#!/usr/bin/env bash
# asyncwatch on a real GPU: the checks and measurements of docs/validation.md and
# docs/performance.md, run from the repository root on a machine with an NVIDIA GPU, a build staged
# on the development machine by test_apps/gpu/stage_build.sh carried beside the tree. It builds
# nothing. Results go under $OUT (never into the tree); exit status 0 when every check passed.
#
#   bash test_apps/gpu/validate_on_gpu.sh [options] CHECK...
#
# Checks (each writes $OUT/CHECK/ and one line per result into $OUT/summary.txt):
#   apps      every test app's expectation file (test_apps/apps/expected/), shared and static
#             runtime, each run bare and traced: same exit status and output, findings as expected;
#             the PyTorch and CuPy scripts beside this file (validate.py)
#   hostile   the programs that misbehave on purpose, bare vs traced (run_hostile.sh --quick)
#   corpus    the public programs of test_apps/corpus/ (.corpus/corpus.tar.xz carried; run_corpus.py)
#   pycorpus  the public Python programs of test_apps/corpus/ (.corpus/pycorpus.tar.xz carried;
#             run_corpus.py --python: bare and under `asyncwatch run`; ~4-6 min): FAIL when a program
#             failed, else RAN; pycorpus/pysummary.txt has each program's verdict (judged on this
#             machine when bin/asyncwatch runs here, else back home)
#   python    the Python line of PyTorch, CuPy, Numba and JAX ops, and the Python frames' cost (python_line.sh)
#   nvtx      NVTX ranges from PyTorch and the nvtx_ranges app (nvtx_torch.sh)
#   timeline  --gpu-times, the Perfetto timeline and the HTML report (timeline.sh)
#   summary   summary mode on a 5-min PyTorch training loop vs a short full trace and bare run (torch_summary.sh; ~6.5 min)
#   shipping  the wheel and the tarball of `bash .ci/package` (build-dist/ carried; run_shipping.sh)
#   overhead  recording on vs paused in one process (bench/run_paired.sh): launch, 64 B pinned copy,
#             cudaEventRecord + cudaEventQuery; static runtime, then shared
#   startup   start-up of a one-call process, bare vs traced, on the idle host CPU (bench/startup.sh)
#   clock     what a clock read costs on this host (bench_clock_cost)
#   analyzer  `asyncwatch report` on a generated 20 M-record trace, records/s of CPU (asyncwatch_bench)
#   all       apps hostile corpus overhead startup (what fits one 600 s call with a staged build)
# The measurements (overhead, startup, clock, analyzer) print their figures (RAN in the summary) and
# fail only when a run failed, never on a figure.
#
# Options:
#   --build DIR     the staged build [build-gpu]: test_apps/, lib/libasyncwatch.so, lib/asyncwatch/sim/,
#                   bin/asyncwatch (and bin/asyncwatch_bench, bin/asyncwatch_bench_gen for `analyzer`)
#   --archive FILE  unpack this tar.xz (made by `stage_build.sh --pack`) in the repository root first
#   --before DIR    an earlier build to compare against (its lib/libasyncwatch.so and bin/asyncwatch),
#                   taking turns with this one in overhead, startup and analyzer [DIR/before if present]
#   --rounds N      rounds of each measurement [2]
#   --budget-s N    start no check after N seconds [560]
#   --dist DIR      the packages for `shipping` [build-dist]
#   --no-pack       leave $OUT/CHECK/ as they are (default: packed into $OUT/results.tar.gz, which
#                   keeps what comes back from a device machine to a few files)
#
# Back on the development machine: tar xzf results.tar.gz, then
#   python3 test_apps/apps/check_app.py results apps/validate --build build     (apps, when the analyzer
#       did not run on the GPU machine: the traces are analysed here, the post-mortem way)
#   python3 test_apps/corpus/check_corpus.py results --results DIR/corpus-results --bin-dir BIN_DIR --build build
#   python3 test_apps/corpus/check_corpus.py pyresults --results DIR/pycorpus-results [--build build]
#   python3 test_apps/gpu/python_line_table.py python/python_line.tar.gz
set -uo pipefail
die() { echo "validate_on_gpu: $*" >&2; exit 2; }
root=$(cd "$(dirname "$0")/../.." && pwd)
gpu=$root/test_apps/gpu
bench=$root/bench
build=build-gpu archive="" before="" rounds=2 budget=560 dist=build-dist pack=1
checks=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=${2:?}; shift ;;
    --archive) archive=${2:?}; shift ;;
    --before) before=${2:?}; shift ;;
    --rounds) rounds=${2:?}; shift ;;
    --budget-s) budget=${2:?}; shift ;;
    --dist) dist=${2:?}; shift ;;
    --no-pack) pack="" ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    all) checks+=(apps hostile corpus overhead startup) ;;
    apps|hostile|corpus|pycorpus|python|nvtx|timeline|summary|shipping|overhead|startup|clock|analyzer) checks+=("$1") ;;
    *) die "unknown argument $1 (--help lists the checks)" ;;
  esac
  shift
done
[[ ${#checks[@]} -gt 0 ]] || die "name at least one check (--help lists them)"
mapfile -t checks < <(printf '%s\n' "${checks[@]}" | awk '!seen[$0]++')
[[ -n ${OUT:-} ]] || die "set OUT to the directory for the results"
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
cd "$root"
if [[ -n $archive ]]; then tar -xJf "$archive" || die "cannot unpack $archive"; fi
[[ -d $build ]] || die "no build directory $build (test_apps/gpu/stage_build.sh makes it)"
B=$(cd "$build" && pwd)
[[ -z $before && -d $B/before ]] && before=$B/before
[[ -z $before ]] || before=$(cd "$before" && pwd) || die "no directory $before"
summary=$OUT/summary.txt
t0=$(date +%s)
failed=0

note() { echo "$*" | tee -a "$summary"; }
left() { echo $(( budget - ($(date +%s) - t0) )); }
limit() {  # the seconds a check may take: its own limit, or what is left of the budget if less
  local l; l=$(left); [[ $l -lt $1 ]] && echo "$l" || echo "$1"
}
judged_here=" apps hostile nvtx summary shipping "  # the others are judged back home, or are measurements
result() {  # check rc: PASS / FAIL (RAN for a check judged elsewhere) into the summary
  if [[ $2 -ne 0 ]]; then note "FAIL $1 (exit status $2)"; failed=1
  elif [[ $judged_here == *" $1 "* ]]; then note "PASS $1"
  else note "RAN $1"; fi
}
before_lib() { [[ -n $before && -f $before/lib/libasyncwatch.so ]] && echo "$before/lib/libasyncwatch.so"; }

{
  echo "host $(hostname), $(date -u +%FT%TZ), $(nproc) cores"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1
  echo "clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
  echo "build $B${before:+, before $before}"
} | tee -a "$summary"

check_apps() {
  PYTHONUNBUFFERED=1 timeout -k 10 "$(limit 460)" python3 "$gpu/validate.py" --build "$B" --out "$1" \
    --budget-s $(( $(limit 460) - 60 )) > "$1/validate.log" 2>&1
  local rc=$?; tail -3 "$1/validate.log"
  [[ $rc -eq 0 ]] || return $rc
  ! grep -qE '^[^ ]+ +[^ ]+ +FAIL' "$1/summary.txt"  # a case whose status is FAIL
}
check_hostile() {
  timeout -k 10 "$(limit 300)" bash "$gpu/run_hostile.sh" --build "$B" --quick --out "$1" > "$1/hostile.log" 2>&1
  local rc=$?; tail -3 "$1/hostile.log"; return $rc
}
check_corpus() {
  [[ -f $root/.corpus/corpus.tar.xz ]] || { echo "no .corpus/corpus.tar.xz (test_apps/corpus/build_corpus.py makes it)"; return 2; }
  PYTHONUNBUFFERED=1 timeout -k 10 "$(limit 300)" python3 "$gpu/run_corpus.py" --preload "$B/lib/libasyncwatch.so" \
    --out "$1" --budget-s $(( $(limit 300) - 40 )) > "$1/corpus.log" 2>&1
  local rc=$?; tail -3 "$1/corpus.log"; return $rc
}
check_pycorpus() {
  [[ -f $root/.corpus/pycorpus.tar.xz ]] || { echo "no .corpus/pycorpus.tar.xz (test_apps/corpus/build_corpus.py --python makes it)"; return 2; }
  PYTHONUNBUFFERED=1 timeout -k 10 "$(limit 470)" python3 "$gpu/run_corpus.py" --python --asyncwatch "$B/bin/asyncwatch" \
    --preload "$B/lib/libasyncwatch.so" --out "$1" --budget-s $(( $(limit 470) - 150 )) > "$1/pycorpus.log" 2>&1
  local rc=$?; tail -12 "$1/pycorpus.log"; return $rc
}
check_python() { OUT=$1 timeout -k 10 "$(limit 300)" bash "$gpu/python_line.sh" "$B" > "$1/python_line.log" 2>&1; }
check_nvtx() {
  OUT=$1 timeout -k 10 "$(limit 120)" bash "$gpu/nvtx_torch.sh" "$B" > "$1/nvtx.log" 2>&1 || return
  ! grep -q FAIL "$1/summary.txt"
}
check_timeline() { OUT=$1 timeout -k 10 "$(limit 300)" bash "$gpu/timeline.sh" "$B" > "$1/timeline.log" 2>&1; }
check_summary() {
  OUT=$1 timeout -k 10 "$(limit 430)" bash "$gpu/torch_summary.sh" "$B" > "$1/torch_summary.log" 2>&1 || return
  grep -q "same findings and .py call sites: True" "$1/result.txt"
}
check_shipping() { OUT=$1 timeout -k 10 "$(limit 300)" bash "$gpu/run_shipping.sh" "$dist" > "$1/shipping.log" 2>&1; }

paired() {  # dir name run_paired.sh-args...: one run, its summary printed; fails when the run did
  local dir=$1 name=$2 rc; shift 2
  timeout "$(limit 100)" bash "$bench/run_paired.sh" "$B" --procs 6 --reps 20 --cpu 2-5 \
    --items launch,copy_pinned_64,event_record_query "$@" > "$dir/$name.txt" 2>&1
  rc=$?; echo "== $name"; tail -3 "$dir/$name.txt"; return $rc
}
check_overhead() {  # static runtime (this library and the one before alternated), then shared
  local r b rc=0; b=$(before_lib)
  for r in $(seq "$rounds"); do
    paired "$1" static_$r || rc=1
    if [[ -n $b ]]; then paired "$1" static_before_$r --lib "$b" || rc=1; fi
  done
  paired "$1" shared_1 --shared || rc=1
  return $rc
}
check_startup() {  # the bare process, the library before (if any) and this one taking turns run by run
  local r rc=0 libs=(); [[ -n $(before_lib) ]] && libs+=(--lib "$(before_lib)")
  libs+=(--lib "$B/lib/libasyncwatch.so")
  for r in $(seq "$rounds"); do
    timeout "$(limit 90)" bash "$bench/startup.sh" "$B" --runs 301 "${libs[@]}" > "$1/startup_$r.txt" 2>&1 || rc=1
    echo "== startup $r"; cat "$1/startup_$r.txt"
  done
  return $rc
}
check_clock() {
  "$B/test_apps/bench_clock_cost" > "$1/clock_cost.txt" 2>&1
  local rc=$?; cat "$1/clock_cost.txt"; return $rc
}
check_analyzer() {  # this analyzer and the one before (if any) alternated on one generated trace
  [[ -x $B/bin/asyncwatch_bench && -x $B/bin/asyncwatch_bench_gen ]] || { echo "no $B/bin/asyncwatch_bench[_gen]"; return 2; }
  local d r which aw rc=0; d=$(mktemp -d)
  for r in $(seq "$rounds"); do
    for which in this before; do
      aw=$B/bin/asyncwatch
      if [[ $which = before ]]; then [[ -x ${before:-/nonexistent}/bin/asyncwatch ]] || continue; aw=$before/bin/asyncwatch; fi
      [[ $(left) -lt 30 ]] && break 2
      timeout "$(limit 200)" "$B/bin/asyncwatch_bench" --asyncwatch "$aw" --generator "$B/bin/asyncwatch_bench_gen" \
        --dir "$d" --records 20000000 --no-timeline --no-instructions > "$1/bench_${which}_$r.txt" 2>&1 || rc=1
      echo "== $which $r"; grep -i "records/s" "$1/bench_${which}_$r.txt" | head -4
    done
  done
  rm -rf "$d"
  return $rc
}

for c in "${checks[@]}"; do
  if [[ $(left) -lt 30 ]]; then note "SKIP $c (the time budget is spent)"; continue; fi
  mkdir -p "$OUT/$c"
  echo "== $c at $(( $(date +%s) - t0 )) s"
  "check_$c" "$OUT/$c" 2>&1 | tee "$OUT/$c.txt"
  result "$c" "${PIPESTATUS[0]}"
done
note "total $(( $(date +%s) - t0 )) s"
if [[ -n $pack ]]; then
  (cd "$OUT" && tar czf results.tar.gz --remove-files "${checks[@]/%/.txt}" $(printf '%s\n' "${checks[@]}" | sort -u))
fi
exit $failed
