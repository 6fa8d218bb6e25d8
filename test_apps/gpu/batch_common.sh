# Sourced by the device_batch*.sh scripts (from the repository root, $OUT set, B the staged build):
# the GPU and clock source into $OUT/gpu.txt, and one paired recording-on-vs-paused run.
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
