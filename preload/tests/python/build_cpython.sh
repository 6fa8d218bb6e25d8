#!/usr/bin/env bash
# Builds a CPython interpreter from its source tree, for the python_frames tests of a version that
# no package installs here (3.14 on Debian 12). The source is not part of this repository: unpack a
# release (a python.org tarball, or `git archive vX.Y.Z` of CPython's repository) first.
#
# usage: build_cpython.sh SOURCE_DIR PREFIX [JOBS]
#   SOURCE_DIR  an unpacked CPython source release (has ./configure)
#   PREFIX      where it installs (PREFIX/bin/python3.X, PREFIX/include/python3.X/internal/...);
#               the build itself is made in PREFIX.build and removed afterwards
#   JOBS        make -j (default 2)
# Then configure this project with -DAW_TEST_PYTHON_3_<minor>=PREFIX/bin/python3.<minor>, or put
# PREFIX under a root of ASYNCWATCH_TEST_PYTHON_ROOTS as ROOT/versions/3.X.Y (pyenv's layout):
# the python.*-3.X tests then run against it (docs/python-frames.md, "Tests").
#
# A shared libpython with its rpath, as pyenv builds it; no PGO/LTO (the layout and the frames do
# not depend on them). Takes about 10 minutes on 2 cores. Needs a C compiler, make, and the
# headers of libffi (ctypes, which the tests use), zlib and OpenSSL.
set -euo pipefail
[[ $# -ge 2 ]] || { sed -n '2,13p' "$0" >&2; exit 2; }
src=$(cd "$1" && pwd)
mkdir -p "$2"
prefix=$(cd "$2" && pwd)
jobs=${3:-2}
[[ -x $src/configure ]] || { echo "build_cpython.sh: $src has no configure script" >&2; exit 2; }
build=$prefix.build
rm -rf "$build"
mkdir -p "$build"
trap 'rm -rf "$build"' EXIT
cd "$build"
"$src/configure" --prefix="$prefix" --enable-shared LDFLAGS="-Wl,-rpath,$prefix/lib" --without-ensurepip >configure.log 2>&1 ||
  { tail -30 configure.log >&2; exit 1; }
make -j"$jobs" >make.log 2>&1 || { tail -40 make.log >&2; exit 1; }
make install >install.log 2>&1 || { tail -40 install.log >&2; exit 1; }
minor=$(sed -n 's/^#define PY_MINOR_VERSION[[:space:]]*\([0-9]*\).*/\1/p' "$src/Include/patchlevel.h")
python=$prefix/bin/python3.$minor
"$python" -c 'import sys, ctypes, sysconfig; print(sys.version); print(sysconfig.get_paths()["include"])'
echo "built $python"
