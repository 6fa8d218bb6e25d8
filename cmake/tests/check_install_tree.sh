#!/usr/bin/env bash
# Test package.install-tree: `cmake --install` into a temporary prefix gives exactly the files of
# docs/contracts.md ("Install tree"); the installed command runs a program on the installed simulator
# and reports its trace; a consumer project builds against find_package(asyncwatch) and pauses
# recording through asyncwatch::control.
# usage: check_install_tree.sh BUILD_DIR CONSUMER_SOURCE_DIR CMAKE_GENERATOR
set -euo pipefail
build=$1 consumer=$2 generator=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "package.install-tree: $*" >&2; exit 1; }

prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
expected="bin/asyncwatch
include/asyncwatch/control.h
lib/asyncwatch/sim/libcuda.so.1
lib/asyncwatch/sim/libcudart.so.13
lib/cmake/asyncwatch/asyncwatchConfig.cmake
lib/cmake/asyncwatch/asyncwatchConfigVersion.cmake
lib/libasyncwatch.so
share/doc/asyncwatch/LICENSE
share/doc/asyncwatch/THIRD_PARTY_NOTICES
share/doc/asyncwatch/licenses/GPL-3.0.txt
share/doc/asyncwatch/licenses/LGPL-3.0.txt
share/man/man1/asyncwatch.1"
actual=$(cd "$prefix" && find . -type f -o -type l | sed 's|^\./||' | LC_ALL=C sort)
[ "$actual" = "$expected" ] || fail "installed files differ from the expected list:
$(diff <(echo "$expected") <(echo "$actual") || true)"
[ -x "$prefix/bin/asyncwatch" ] || fail "bin/asyncwatch is not executable"
grep -q "Apache License" "$prefix/share/doc/asyncwatch/LICENSE" || fail "LICENSE is not the Apache License"
grep -q "elfutils" "$prefix/share/doc/asyncwatch/THIRD_PARTY_NOTICES" || fail "THIRD_PARTY_NOTICES names no elfutils"
"$prefix/bin/asyncwatch" --version | grep -q '^0\.' || fail "asyncwatch --version"

# The consumer, configured with nothing but the prefix.
cmake -S "$consumer" -B "$tmp/consumer" -G "$generator" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$tmp/consumer" >/dev/null
{ read -r exe; read -r preload; read -r version; } < "$tmp/consumer/asyncwatch_package.txt"
[ "$exe" = "$prefix/bin/asyncwatch" ] || fail "asyncwatch::asyncwatch is $exe"
[ "$preload" = "$prefix/lib/libasyncwatch.so" ] || fail "asyncwatch_PRELOAD_LIBRARY is $preload"
[ "$version" = "$("$prefix/bin/asyncwatch" --version)" ] || fail "asyncwatch_VERSION $version"
bare=$("$tmp/consumer/consumer")
[ "$bare" = "asyncwatch is not loaded" ] || fail "consumer without asyncwatch printed: $bare"

# The installed command, its preload library and its simulator (nothing from the build tree).
cd "$tmp"
out=$(ASYNCWATCH_QUIET=1 "$exe" run --sim -o "$tmp/traces" --format json --report-output "$tmp/report.json" \
      -- "$tmp/consumer/consumer" 2>"$tmp/run.err") || fail "asyncwatch run failed: $(cat "$tmp/run.err")"
[ "$out" = "recording was 1, then 0" ] || fail "consumer under asyncwatch printed: $out"
grep -qF "($prefix/bin/../lib/asyncwatch/sim)" "$tmp/run.err" || fail "run --sim did not use the installed simulator: $(cat "$tmp/run.err")"
python3 - "$tmp/report.json" <<'PY' || fail "report of the consumer's trace"
import json, sys
r = json.load(open(sys.argv[1]))
p = r["processes"]
assert len(p) == 1 and p[0]["pauses"] == 1 and p[0]["closed_cleanly"], p
PY
"$exe" report "$tmp/traces" >/dev/null || fail "asyncwatch report of the installed command"
echo "package.install-tree: ok ($(echo "$actual" | wc -l) files)"
