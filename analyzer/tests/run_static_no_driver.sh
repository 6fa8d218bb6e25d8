#!/bin/sh
# Test cli.run-static-no-driver: a program built the nvcc-default way (the CUDA runtime linked in)
# run without --sim where no CUDA driver can be loaded writes no trace; `run` must exit 4 and say
# why, not 0 (its runtime found no libcuda.so.1, through nothing the preload library sees).
# Skipped (77) on a machine with a driver.
# usage: run_static_no_driver.sh ASYNCWATCH STATIC_PROGRAM SCRATCH_DIR
aw=$1 program=$2 dir=$3
for d in $(printf '%s' "${LD_LIBRARY_PATH:-}" | tr ':' ' '); do
  [ -e "$d/libcuda.so.1" ] && { echo "skipped: $d/libcuda.so.1 exists"; exit 77; }
done
if { ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null; } | grep -q 'libcuda\.so\.1 '; then
  echo "skipped: this machine has a CUDA driver (ldconfig -p lists libcuda.so.1)"
  exit 77
fi
rm -rf "$dir"
out=$("$aw" run --fail-on warning -o "$dir" -- "$program" 2>&1)
rc=$?
rm -rf "$dir"
printf '%s\n' "$out"
[ "$rc" = 4 ] || { echo "FAILED: exit status $rc, expected 4"; exit 1; }
printf '%s\n' "$out" | grep -q 'no CUDA driver (libcuda.so.1) can be loaded' || { echo "FAILED: no reason given"; exit 1; }
echo "ok: exit 4"
