# Sourced by the device_batch*.sh scripts (from the repository root, $OUT set, B the staged build):
# the GPU and clock source into $OUT/gpu.txt, the test apps, one paired recording-on-vs-paused run,
# and start-up bare vs traced with this library and the one before ($B/lib/before/); the scripts
# define since().
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
apps_and_paired() {  # the GPU, the test apps (200 s), then paired static (new, before) and shared (new)
  gpu_info
  validate_apps 200
  since "validate done"
  paired static_new
  paired static_before --lib $B/lib/before/libasyncwatch.so
  paired shared_new --shared
  since "paired done"
}
