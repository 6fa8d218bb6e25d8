#!/usr/bin/env bash
# GPU times on a real GPU: the seed program (pageable and pinned),
# pinned_vs_pageable and a multi-stream app (threads_streams) under `asyncwatch run --gpu-times`;
# for each, the trace, the text report (with the GPU overlap figures), the timeline as a binary
# Perfetto trace and as JSON, the hand decoder's summary of the Perfetto file and the HTML report
# (NAME.report.html); then the cost of GPU-times mode: overhead_bench --paired (recording on /
# paused, in-process) with and without ASYNCWATCH_GPU_TIMES=1. Everything goes to $OUT/timeline.tar.gz (and summary.txt).
#   bash test_apps/gpu/timeline.sh BUILD_DIR [--sim]   (BUILD_DIR: test_apps/gpu/stage_build.sh's output;
#   --sim: a dry run on the simulator, for checking the script without a GPU)
# Wall time about 2-3 minutes.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:?usage: timeline.sh BUILD_DIR [--sim]}" && pwd)
sim=()
[ "${2:-}" = "--sim" ] && sim=(--sim)
out=${OUT:?set OUT}/timeline
mkdir -p "$out"
aw=$build/bin/asyncwatch
apps=$build/test_apps
summary=$out/summary.txt
log() { echo "$*" | tee -a "$summary"; }
nvidia-smi -L 2>&1 | tee -a "$summary"

one() {  # name app args...
  local name=$1; shift
  local d=$out/$name
  rm -rf "$d"
  log "== $name: $*"
  local t0=$(date +%s.%N)
  "$aw" run "${sim[@]}" --gpu-times -o "$d" --report-output "$out/$name.report.txt" -- "$@" > "$out/$name.stdout" 2> "$out/$name.stderr"
  log "rc=$? wall=$(awk -v a=$t0 -v b=$(date +%s.%N) 'BEGIN{printf "%.2f", b-a}')s"
  grep -E "^Elapsed|^#|ok$" "$out/$name.stdout" "$out/$name.stderr" | head -20 | tee -a "$summary"
  grep -E "GPU, stream|while the host waited" "$out/$name.report.txt" | head -20 | tee -a "$summary"
  "$aw" timeline -o "$out/$name.pftrace" "$d" 2>&1 | tee -a "$summary"
  "$aw" timeline --format json -o "$out/$name.json" "$d" 2>&1 | tee -a "$summary"
  # The HTML report, made here where the binaries are (call sites with their source lines).
  "$aw" report --format html -o "$out/$name.report.html" "$d" 2>&1 | tee -a "$summary"
  python3 "$root/analyzer/tests/timeline/decode_perfetto.py" "$out/$name.pftrace" > "$out/$name.decoded.json" 2>&1
  python3 - "$out/$name.decoded.json" <<'PY' | tee -a "$summary"
import json, sys
t = open(sys.argv[1]).read()
s = json.loads(t[: t.rindex("}") + 1])
print({k: s[k] for k in ("processes", "threads", "gpu_tracks", "gpu_slices", "flows", "flagged", "slices")})
PY
  grep FAILED "$out/$name.decoded.json" | tee -a "$summary"
  "$aw" dump "$d"/*.awtrace | grep -E "GpuClock" | head -5 | tee -a "$summary"
}

one seed_pageable "$apps/seed_answer"
one seed_pinned "$apps/seed_answer" pinned
one pinned_vs_pageable "$apps/pinned_vs_pageable" 268435456 3
one threads_streams "$apps/threads_streams"

# The cost of GPU-times mode: paired on/paused ratios, without and with it (the difference is the
# events' cost; docs/timeline.md).
bench=$root/bench/run_paired.sh
if [ -x "$apps/overhead_bench.static" ] && [ ${#sim[@]} -eq 0 ] || [ -x "$apps/overhead_bench" ]; then
  log "== paired, GPU times off"
  ASYNCWATCH_GPU_TIMES=0 timeout 150 bash "$bench" "$build" "${sim[@]}" --procs 4 --reps 20 --items launch,copy_pinned_64 2>&1 | tail -4 | tee -a "$summary"
  log "== paired, GPU times on"
  ASYNCWATCH_GPU_TIMES=1 timeout 150 bash "$bench" "$build" "${sim[@]}" --procs 4 --reps 20 --items launch,copy_pinned_64 2>&1 | tail -4 | tee -a "$summary"
else
  log "no overhead_bench in $apps: cost not measured"
fi
tar czf "$OUT/timeline.tar.gz" -C "$OUT" timeline && cp "$summary" "$OUT/summary.txt"
du -sh "$OUT/timeline.tar.gz"
