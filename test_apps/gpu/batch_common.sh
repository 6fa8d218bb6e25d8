# Sourced by the device_batch*.sh scripts (from the repository root, $OUT set, B the staged build):
# the GPU and clock source into $OUT/gpu.txt, the test apps, one paired recording-on-vs-paused run,
# start-up bare vs traced with this library and the one before ($B/lib/before/), the hostile
# programs and the analyzer's speed. A script sets paired_limit (optional) and sources this first.
B=build-gpu
t0=$(date +%s)
since() { echo "$1 at $(( $(date +%s) - t0 )) s"; }
gpu_info() {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
  cat /sys/devices/system/clocksource/clocksource0/current_clocksource >> $OUT/gpu.txt
}
paired_limit=${paired_limit:-90}  # seconds per paired run
paired() {  # name run_paired.sh-args...: $OUT/name.txt, its last three lines printed
  local name=$1; shift
  timeout $paired_limit bash test_apps/bench/run_paired.sh $B --procs 6 --reps 20 --cpu 2-5 \
    --items launch,copy_pinned_64,event_record_query "$@" > $OUT/$name.txt 2>&1
  echo "== $name"; tail -3 $OUT/$name.txt
}
paired_ab() {  # rounds: paired static runs of this library and the one before ($B/lib/before/), alternated
  local r
  for r in $(seq "$1"); do
    paired static_new_$r
    paired static_before_$r --lib $B/lib/before/libasyncwatch.so
  done
}
validate_apps() {  # budget_s: validate.sh on every test app, its last two lines printed
  OUT=$OUT bash test_apps/gpu/validate.sh $B --budget-s "$1" > $OUT/validate.log 2>&1; tail -2 $OUT/validate.log
}
startup_ab() {  # cpu runs limit_s: $OUT/startup_new.txt and startup_before.txt, the figures printed
  local lib extra
  for lib in new before; do
    extra=(); [ $lib = before ] && extra=(--lib $B/lib/before/libasyncwatch.so)
    timeout "$3" taskset -c "$1" bash test_apps/bench/startup.sh $B --runs "$2" "${extra[@]}" > $OUT/startup_$lib.txt 2>&1
    echo "== startup_$lib"; tail -1 $OUT/startup_$lib.txt
  done
}
startup_pair() {  # tag: this library and the one before, on the whole idle machine
  local lib extra
  for lib in new before; do
    extra=(); [ $lib = before ] && extra=(--lib $B/lib/before/libasyncwatch.so)
    timeout 40 bash test_apps/bench/startup.sh $B --runs 151 "${extra[@]}" > $OUT/startup_${1}_$lib.txt 2>&1
    echo "== startup_${1}_$lib"; tail -1 $OUT/startup_${1}_$lib.txt
  done
}
startup_turns() {  # rounds runs [first]: the bare process, the library before ($B/lib/before/) and this
  # one taking turns run by run (startup.sh with two --lib), on the whole machine; rounds numbered from first
  local r
  for r in $(seq "${3:-1}" $(( ${3:-1} + $1 - 1 ))); do
    timeout 90 bash test_apps/bench/startup.sh $B --runs "$2" --lib $B/lib/before/libasyncwatch.so \
      --lib $B/lib/libasyncwatch.so > $OUT/startup_all$r.txt 2>&1
    echo "== startup_all$r"; cat $OUT/startup_all$r.txt
  done
  since "startup done"
}
apps_and_paired() {  # the GPU, the test apps (200 s), then paired static (new, before) and shared (new)
  gpu_info
  validate_apps 200
  since "validate done"
  paired static_new
  paired static_before --lib $B/lib/before/libasyncwatch.so
  paired shared_new --shared
  since "paired done"
}
hostile() {  # limit_s: run_hostile.sh --quick into $OUT/hostile, its last lines printed
  timeout "$1" bash test_apps/gpu/run_hostile.sh --build $B --quick --out $OUT/hostile > $OUT/hostile.log 2>&1
  tail -3 $OUT/hostile.log
  since "hostile done"
}
corpus() {  # budget_s: the corpus of public programs (.corpus carried) with $B's library into $OUT/corpus
  mkdir -p $OUT/corpus
  OUT=$OUT/corpus timeout $(( $1 + 15 )) bash test_apps/gpu/run_corpus.sh --preload $B/lib/libasyncwatch.so \
    --budget-s "$1" > $OUT/corpus.log 2>&1
  tail -2 $OUT/corpus.log
  since "corpus done"
}
hostile_and_analyzer() {  # the hostile programs, then the analyzer (new, before: $B/bin/before/) alternated
  hostile 300
  analyzer_bench 570
}
# On the idle host CPU: one generated 20 M-record trace; the bench pins itself to one core and
# prints records/s of CPU time; this analyzer and the one before ($B/bin/before/) alternated, two
# rounds, until `budget_s` seconds after the batch's start.
analyzer_bench() {
  local d round which aw left
  d=$(mktemp -d)
  for round in 1 2; do
    for which in new before; do
      aw=$B/bin/asyncwatch; [ $which = before ] && aw=$B/bin/before/asyncwatch
      left=$(( $1 - ($(date +%s) - t0) )); [ $left -lt 30 ] && break 2
      timeout $left $B/bin/asyncwatch_bench --asyncwatch $aw --generator $B/bin/asyncwatch_bench_gen --dir "$d" \
        --records 20000000 --no-timeline --no-instructions > $OUT/bench_${which}_$round.txt 2>&1
      echo "== bench $which $round"; grep -i "records/s" $OUT/bench_${which}_$round.txt | head -4
    done
  done
  rm -rf "$d"
}
pack_out() {  # everything under $OUT into $OUT/results.tgz (the machine brings back at most 8 files)
  (cd "$OUT" && tar czf results.tgz --remove-files $(ls | grep -vx results.tgz))
}
