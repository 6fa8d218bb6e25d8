#!/bin/sh
# Runs the seed program on the simulator, pageable then pinned, and checks what the seed shows on a
# GPU, as ratios: pageable H2D blocks in proportion to its size (2 GiB / 3.8 GB/s staging), pageable
# D2H blocks for at least the sleep kernel (and its own copy), pinned copies return in microseconds.
# The seed measures CLOCK_PROCESS_CPUTIME_ID; the simulator spins while the host waits, so CPU time
# follows the blocking.
set -eu
app="$1"
pageable=$("$app")
pinned=$("$app" pinned)
printf '%s\n--- pinned ---\n%s\n' "$pageable" "$pinned"
printf '%s\n' "$pageable" | grep -q "After cudaStreamSynchronize, the stream has concluded" || { echo "FAILED: callback"; exit 1; }
printf '%s\n%s\n' "$pageable" "$pinned" | awk '
  /^Elapsed:/ { v[n++] = $2 + 0 }
  END {
    kernel = 1e6 / 1.98e9; staging = 2147483648 / 3.8e9
    fail = 0
    if (n != 4) { print "FAILED: expected 4 Elapsed lines, got " n; exit 1 }
    if (v[0] < 0.5 * staging) { print "FAILED: pageable H2D " v[0] " s < half of " staging " s"; fail = 1 }
    if (v[1] < 0.9 * kernel) { print "FAILED: pageable D2H " v[1] " s < 0.9 x kernel " kernel " s"; fail = 1 }
    if (v[2] > 0.01 * v[0]) { print "FAILED: pinned H2D " v[2] " s not < 1% of the pageable one"; fail = 1 }
    if (v[3] > 0.01 * v[1]) { print "FAILED: pinned D2H " v[3] " s not < 1% of the pageable one"; fail = 1 }
    if (!fail) print "ok: seed behaviour reproduced"
    exit fail
  }'
