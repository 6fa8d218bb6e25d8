#!/usr/bin/env bash
# Runs every app bare (no asyncwatch) on a real GPU, static and shared builds, printing exit status
# and the apps' own timing lines (stderr "# ..."). Quick calibration; validate.sh is the full run.
#   bash test_apps/gpu/bare_smoke.sh BUILD_DIR
b=${1:-build}/test_apps
run() {  # name args...
  local name=$1; shift
  for exe in "$b/$name" "$b/$name.static"; do
    [ -x "$exe" ] || continue
    local t0=$(date +%s.%N)
    timeout 120 "$exe" "$@" >/tmp/smoke.out 2>/tmp/smoke.err; local rc=$?
    local t1=$(date +%s.%N)
    printf '== %s %s rc=%d wall=%.2fs\n' "$(basename "$exe")" "$*" $rc "$(awk -v a=$t0 -v b=$t1 'BEGIN{print b-a}')"
    sed 's/^/   out: /' /tmp/smoke.out | head -20; sed 's/^/   err: /' /tmp/smoke.err | head -40
  done
}
nvidia-smi -L
run seed_answer; run seed_answer 1; run seed_question
run seed_ratio pageable; run seed_ratio pinned
run pageable_h2d_sizes; run pageable_d2h_after_kernel; run pinned_kinds; run managed_memory
run host_to_host; run memsets; run callbacks; run blocking_launches; run blocking_launches 20000 20000
run default_streams; run default_streams_ptds; run threads_streams; run fork_exec; run graph_capture
run last_error
run driver_api; run driver_api_lcuda; run no_cuda
