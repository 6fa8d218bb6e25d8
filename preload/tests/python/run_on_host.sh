#!/usr/bin/env bash
# The python_frames checks with one interpreter, on a machine where the build was not made (the
# H200: Ubuntu's CPython in /opt/torch/.venv). Each check's output goes to OUT_DIR/<check>.txt and
# a summary to OUT_DIR/summary.txt (8 files); exit 1 when a check fails.
# usage: run_on_host.sh [PYTHON [HELPER.so [OUT_DIR]]]
# defaults, for the H200 run from the repository root: /opt/torch/.venv/bin/python3,
# build-h200/libaw_pyframes_helper.so (built here, carried: docs/python-frames.md says how), "$OUT".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
python=${1:-/opt/torch/.venv/bin/python3} helper=${2:-$root/build-h200/libaw_pyframes_helper.so} out=${3:-${OUT:-}}
[[ -n $out ]] || { echo "run_on_host.sh: no OUT_DIR given and \$OUT is not set" >&2; exit 2; }
[[ -x $python ]] || { echo "run_on_host.sh: $python is not an executable" >&2; exit 2; }
[[ -f $helper ]] || { echo "run_on_host.sh: $helper does not exist (build it: see docs/python-frames.md)" >&2; exit 2; }
mkdir -p "$out"
status=0
: >"$out/summary.txt"
run() {
  local name=$1 line
  shift
  if "$@" >"$out/$name.txt" 2>&1; then
    line="ok   $name: $(tail -1 "$out/$name.txt")"
  else
    line="FAIL $name: $(tail -1 "$out/$name.txt")"
    status=1
  fi
  echo "$line" | tee -a "$out/summary.txt"
}
{
  "$python" -VV
  "$python" -c 'import sys, sysconfig; print(sys.executable, sysconfig.get_config_var("LDLIBRARY"), sysconfig.get_config_var("Py_ENABLE_SHARED"))'
  uname -a
  ldd --version | head -1
} >"$out/python.txt" 2>&1
run walk "$python" "$here/walk_test.py" "$helper"
run linetable "$python" "$here/linetable_test.py" "$helper"
run stress "$python" "$here/stress_test.py" "$helper" 5
run shutdown "$python" "$here/shutdown_test.py" "$helper" 50
run bench "$python" "$here/bench_walk.py" "$helper" 1000000 10 50
run torch "$python" "$here/torch_check.py" "$helper"
exit $status
