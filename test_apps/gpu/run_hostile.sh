#!/usr/bin/env bash
# Runs every mode of test_apps/apps/hostile_app.cu (descriptors closed or replaced,
# the same in a fork child, closed stdin/stdout/stderr, signal handlers calling _exit/exit or CUDA during the first call,
# a pending pthread_cancel at the first call, RLIMIT_NOFILE with one descriptor free) bare and under
# LD_PRELOAD=libasyncwatch.so, for the shared- and the static-runtime build, and compares: exit
# status, stdout and the report files must be the same; the traces must read, be closed cleanly
# and account for every call (written + records_lost); the analyzer (when it runs here) must read
# them. Where it applies, each mode runs twice: the trace descriptor in the library's own table
# (the default) and in the process's table (unshare denied by a seccomp filter, as in containers).
#
#   bash test_apps/gpu/run_hostile.sh [--build DIR] [--sim] [--quick] [--only REGEX] [--out DIR]
#     --build DIR  build tree (test_apps/hostile_app[.static], lib/libasyncwatch.so, bin/asyncwatch) [build]
#     --sim        on the simulator (DIR/lib/asyncwatch/sim; shared-runtime build only)
#     --quick      small sizes (CI on the simulator)
#     --only RE    only the cases whose name matches RE (e.g. '^sig_')
#     --out DIR    where hostile_summary.txt and hostile.tar.gz go [$OUT, else ./hostile-out]
# Exit status 0 when every case passed, 1 otherwise, 2 on usage errors. CTest runs it on the
# simulator (hostile.*); on a GPU machine `validate_on_gpu.sh hostile` runs it with the staged build.
set -uo pipefail
die() { echo "run_hostile: $*" >&2; exit 2; }
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build
sim=""
quick=""
only=""
out=${OUT:-}
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=${2:?}; shift ;;
    --sim) sim=1 ;;
    --quick) quick=1 ;;
    --only) only=${2:?}; shift ;;
    --out) out=${2:?}; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1" ;;
  esac
  shift
done
build=$(cd "$build" && pwd) || die "no build directory"
out=${out:-$PWD/hostile-out}
mkdir -p "$out" && out=$(cd "$out" && pwd)
lib=$build/lib/libasyncwatch.so
[[ -f $lib ]] || die "no $lib"
simdir=$build/lib/asyncwatch/sim
[[ -z $sim || -d $simdir ]] || die "no simulator in $simdir"
analyzer=""
if [[ -x $build/bin/asyncwatch ]] && "$build/bin/asyncwatch" --version >/dev/null 2>&1; then analyzer=$build/bin/asyncwatch; fi
work=$(mktemp -d "${TMPDIR:-/tmp}/aw-hostile.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Sizes: the simulator drains ~0.1 ms per operation and CI wants seconds; on the GPU the children
# pay a context creation each (~0.3 s).
if [[ -n $quick ]]; then chunks=96; kids=10; step=150; else chunks=2048; kids=24; step=120; fi

# The environment of every run: ours only (no inherited asyncwatch settings or preloads).
for v in $(compgen -e); do case $v in ASYNCWATCH_SIM_*) ;; ASYNCWATCH_*|AW_HOSTILE_*) unset "$v" ;; esac; done
unset LD_PRELOAD
[[ -n $sim ]] && export LD_LIBRARY_PATH=$simdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# name | closed descriptors | extra environment | arguments (@DIR = the run's own directory)
cases=()
for how in closefrom close_range dup2; do
  cases+=("fds.$how.own-table||| fds $how @DIR/own.data $chunks")
  cases+=("fds.$how.process-table||AW_HOSTILE_DENY_UNSHARE=1| fds $how @DIR/own.data $chunks")
done
for how in closefrom dup2; do
  cases+=("fork_fds.$how.own-table||| fork_fds $how @DIR/own.data $chunks")
  cases+=("fork_fds.$how.process-table||AW_HOSTILE_DENY_UNSHARE=1| fork_fds $how @DIR/own.data $chunks")
done
for c in 0 1 2 012; do
  cases+=("stdio.closed-$c.own-table|$c|| stdio @DIR/report")
  cases+=("stdio.closed-$c.process-table|$c|AW_HOSTILE_DENY_UNSHARE=1| stdio @DIR/report")
done
cases+=("sig_exit._exit||| sig_exit _exit $kids $step")
cases+=("sig_exit.exit||| sig_exit exit $kids $step")
cases+=("sig_cuda||| sig_cuda $kids $step")
cases+=("cancel||| cancel")
cases+=("nofile.own-table||| nofile")
cases+=("nofile.process-table||AW_HOSTILE_DENY_UNSHARE=1| nofile")

linkages=(shared)
[[ -z $sim ]] && linkages+=(static)

# run DIR CLOSED ENV ARGS... : stdout, stderr, rc in DIR
run_one() {
  local dir=$1 closed=$2 env=$3
  shift 3
  mkdir -p "$dir/traces"
  local args=()
  for a in "$@"; do args+=("${a//@DIR/$dir}"); done
  local redir=""
  [[ $closed == *0* ]] && redir+=" 0<&-"
  [[ $closed == *1* ]] && redir+=" 1>&-"
  [[ $closed == *2* ]] && redir+=" 2>&-"
  # stdout/stderr to files first, then the closes (a closed one writes nowhere, as it would).
  ( cd "$dir" && eval "env $env ASYNCWATCH_OUTPUT_DIR='$dir/traces' timeout -k 5 240 \"\${args[@]}\" >'$dir/stdout' 2>'$dir/stderr' $redir" )
  echo $? >"$dir/rc"
}

check_traces() {  # DIR CASE CHUNKS KIDS -> one line: "ok ..." or "FAIL ..."
  python3 - "$@" <<'EOF'
import glob, os, struct, sys
d, case, chunks, kids = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
def read(p):
    data = open(p, 'rb').read()
    if len(data) < 4096 or data[:8] != b'ASYNCWTR':
        return None
    closed, = struct.unpack_from('<I', data, 20)
    lost, = struct.unpack_from('<Q', data, 80)
    counts = {}
    for off in range(4096, len(data) - 65535, 65536):
        if struct.unpack_from('<I', data, off)[0] != 0x314b4c42:
            continue
        pos = 16
        while pos + 4 <= 65536:
            t, sz = struct.unpack_from('<HH', data, off + pos)
            if t == 0 or sz < 4 or pos + sz > 65536:
                break
            counts[t] = counts.get(t, 0) + 1
            pos += sz
    return dict(closed=closed == 0x45534f4c, lost=lost, copies=counts.get(5, 0), syncs=counts.get(10, 0))
traces = sorted(glob.glob(os.path.join(d, 'traces', '*.awtrace')))
t = [read(p) for p in traces]
bad = []
if any(x is None for x in t): bad.append('unreadable trace')
t = [x for x in t if x]
if any(not x['closed'] for x in t): bad.append('trace not closed cleanly')
err = os.path.join(d, 'stderr')
warnings = sum(1 for l in open(err, errors='replace') if 'asyncwatch[' in l and 'warning:' in l) if os.path.exists(err) else 0
kind = case.split('.')[0]
own = case.endswith('own-table')
if kind == 'fds':
    want = 1002 + 40 * chunks
    if len(t) != 1: bad.append('%d traces' % len(t))
    elif own and (t[0]['copies'] != want or t[0]['lost']): bad.append('copies %d (want %d), lost %d' % (t[0]['copies'], want, t[0]['lost']))
    # records_lost counts every call not written, synchronizations too (one per 16 chunks, one at
    # the end, one in the first calls).
    elif not own and t[0]['copies'] + t[0]['syncs'] + t[0]['lost'] != want + chunks // 16 + 2:
        bad.append('copies %d + syncs %d + lost %d != %d' % (t[0]['copies'], t[0]['syncs'], t[0]['lost'], want + chunks // 16 + 2))
    if own and t and t[0]['syncs'] != chunks // 16 + 2: bad.append('%d syncs (want %d)' % (t[0]['syncs'], chunks // 16 + 2))
    if own and warnings: bad.append('%d warnings' % warnings)
    if warnings > 1: bad.append('%d warnings' % warnings)
elif kind == 'fork_fds':
    # The parent's trace: every call of its own, nothing lost (the child makes no CUDA call; a trace
    # of its own, if any, holds none).
    want = 1002 + 40 * (chunks // 2) * 2
    parents = [x for x in t if x['copies']]
    if len(parents) != 1: bad.append('%d traces with copies' % len(parents))
    elif parents[0]['copies'] != want or parents[0]['lost']: bad.append('parent copies %d (want %d), lost %d' % (parents[0]['copies'], want, parents[0]['lost']))
    if warnings: bad.append('%d warnings' % warnings)
elif kind == 'stdio':
    if len(t) != 1: bad.append('%d traces' % len(t))
    elif t[0]['copies'] + t[0]['lost'] != 1002 + 640: bad.append('copies %d + lost %d' % (t[0]['copies'], t[0]['lost']))
elif kind == 'sig_exit':
    if len(t) > kids: bad.append('%d traces' % len(t))
elif kind == 'sig_cuda':
    if len(t) != kids: bad.append('%d traces for %d children' % (len(t), kids))
    for x in t:
        if x['syncs'] + x['lost'] != 1: bad.append('handler call: %d written + %d lost' % (x['syncs'], x['lost'])); break
elif kind == 'cancel':
    if len(t) != 1: bad.append('%d traces' % len(t))
elif kind == 'nofile':
    if own and (len(t) != 1 or t[0]['copies'] + t[0]['lost'] > 10): bad.append('%d traces' % len(t))
    if not own and t: bad.append('a trace although no descriptor was free')
    if warnings > 1: bad.append('%d warnings' % warnings)
summary = '%d traces, %d written copies, %d syncs, %d lost, %d warnings' % (len(t), sum(x['copies'] for x in t), sum(x['syncs'] for x in t), sum(x['lost'] for x in t), warnings)
print(('FAIL ' + '; '.join(bad) + ' (' + summary + ')') if bad else 'ok ' + summary)
EOF
}

{
  echo "run_hostile: $(date -u +%FT%TZ) $(uname -n) build=$build sim=${sim:-no} quick=${quick:-no}"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
  echo "analyzer: ${analyzer:-not available here}"
} >"$out/hostile_summary.txt"
fails=0
total=0
for link in "${linkages[@]}"; do
  app=$build/test_apps/hostile_app
  [[ $link == static ]] && app=$app.static
  [[ -x $app ]] || { echo "FAIL $link: no $app" >>"$out/hostile_summary.txt"; fails=$((fails + 1)); continue; }
  for c in "${cases[@]}"; do
    IFS='|' read -r name closed env args <<<"$c"
    [[ -n $only && ! $name =~ $only ]] && continue
    total=$((total + 1))
    dir=$work/$name.$link
    read -r -a argv <<<"$args"
    start=$(date +%s%N)
    run_one "$dir/bare" "$closed" "$env" "$app" "${argv[@]}"
    run_one "$dir/traced" "$closed" "$env LD_PRELOAD=$lib" "$app" "${argv[@]}"
    ms=$((($(date +%s%N) - start) / 1000000))
    problems=()
    brc=$(cat "$dir/bare/rc") trc=$(cat "$dir/traced/rc")
    [[ $brc == "$trc" ]] || problems+=("exit status bare $brc, traced $trc")
    cmp -s "$dir/bare/stdout" "$dir/traced/stdout" || problems+=("stdout differs")
    if [[ -f $dir/bare/report || -f $dir/traced/report ]]; then
      cmp -s "$dir/bare/report" "$dir/traced/report" || problems+=("report differs")
    fi
    [[ $brc == 0 ]] || problems+=("bare exit status $brc (the mode itself failed)")
    tr=$(check_traces "$dir/traced" "$name" "$chunks" "$kids")
    [[ $tr == ok* ]] || problems+=("${tr#FAIL }")
    an=""
    if [[ -n $analyzer ]] && ls "$dir/traced/traces"/*.awtrace >/dev/null 2>&1; then
      "$analyzer" report --format json "$dir/traced/traces" >"$dir/traced/report.json" 2>"$dir/traced/report.err"
      arc=$?
      if [[ $arc == 2 ]]; then problems+=("analyzer: $(head -c 200 "$dir/traced/report.err")"); else an=", analyzer read them"; fi
    fi
    if ((${#problems[@]})); then
      fails=$((fails + 1))
      line="FAIL $name.$link: $(IFS=';'; echo "${problems[*]}")"
    else
      line="PASS $name.$link: exit $trc, stdout same as bare, ${tr#ok }$an (${ms} ms)"
    fi
    echo "$line" | tee -a "$out/hostile_summary.txt"
  done
done
echo "run_hostile: $((total - fails)) of $total passed" | tee -a "$out/hostile_summary.txt"
# The programs' own data files stay out (8 MiB each); the traces too if the archive would not fit
# into what a device run brings back (16 MiB a file).
tar czf "$out/hostile.tar.gz" --exclude='*.data' --exclude='*.data.child' -C "$work" . 2>/dev/null
if (($(stat -c %s "$out/hostile.tar.gz") > 15 * 1024 * 1024)); then
  tar czf "$out/hostile.tar.gz" --exclude='*.data' --exclude='*.data.child' --exclude='*.awtrace' -C "$work" . 2>/dev/null
  echo "run_hostile: traces left out of hostile.tar.gz (too large)" >>"$out/hostile_summary.txt"
fi
((fails == 0))
