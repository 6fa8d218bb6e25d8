#!/bin/sh
# Test cli.report-reader-gone: a reader that stops early (`asyncwatch report | head`) with SIGPIPE
# ignored, as CI runners and Python leave it: the report exits 0 and says nothing on stderr.
# usage: reader_gone.sh ASYNCWATCH TRACE SCRATCH_DIR  (the reader, `true`, is gone before the report is written)
aw=$1 trace=$2 dir=$3
mkdir -p "$dir"
trap '' PIPE
{ "$aw" report --format json "$trace" 2>"$dir/stderr"; echo $? >"$dir/status"; } | true  # the reader is gone before the report is written
status=$(cat "$dir/status") err=$(cat "$dir/stderr")
rm -rf "$dir"
[ "$status" = 0 ] && [ -z "$err" ] && { echo "ok: exit 0, silent"; exit 0; }
echo "FAILED: exit status $status, stderr: $err"
exit 1
