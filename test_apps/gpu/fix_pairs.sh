#!/usr/bin/env bash
# The fix pairs on a GPU: for each pair of test_apps/apps/fix_pairs.py (CUDA programs of the build;
# PyTorch, CuPy and Numba scripts of this directory), 5 alternating bare runs of each variant (median
# loop time) and one traced run of the flagged variant (its predicted gain: `asyncwatch report
# --format json`, the pair's findings' impact_ns). Prints the table pair / predicted / measured /
# ratio / tolerance / within / top-ranked right, and a summary line, and writes it to
# $OUT/fix_pairs.txt (or ./fix_pairs.txt without $OUT), and the flagged runs' traces and reports in
# $OUT/fix_pairs_traces.tar.gz. At most 355 s (about 5-6 minutes on
# an H100: the Python pairs run 11 processes each, most of whose time is importing the framework).
#   bash test_apps/gpu/fix_pairs.sh BUILD_DIR [PAIR...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -lt 1 ] || [ ! -x "$1/bin/asyncwatch" ]; then
  echo "usage: $0 BUILD_DIR [PAIR...]   (BUILD_DIR/bin/asyncwatch must exist)" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
shift
out=${OUT:-.}
mkdir -p "$out"
{
  echo "# fix pairs, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
  python3 -c 'import torch; print("# torch", torch.__version__, "CUDA", torch.version.cuda)' 2>/dev/null || echo "# torch: not importable"
} | tee "$out/fix_pairs.head.txt"
status=0
keep="$out/fix_pairs_traces"  # under $out: a run cut short still brings back the pairs done
mkdir -p "$keep"
timeout 355 python3 "$here/../apps/fix_pairs.py" gpu --build "$build" --runs 5 --out "$out/fix_pairs.body.txt" \
  --keep "$keep" "$@" || status=$?
# The flagged runs' traces and reports, for a look at a missed prediction: one archive.
tar -czf "$out/fix_pairs_traces.tar.gz" -C "$keep" . && rm -rf "$keep"
[ "$status" = 124 ] && echo "# cut short at 355 s: the pairs above are the ones done (run the rest by name: fix_pairs.sh BUILD PAIR...)" >> "$out/fix_pairs.body.txt"
cat "$out/fix_pairs.head.txt" "$out/fix_pairs.body.txt" > "$out/fix_pairs.txt"
rm -f "$out/fix_pairs.head.txt" "$out/fix_pairs.body.txt"
echo "written: $out/fix_pairs.txt"
