#!/usr/bin/env python3
"""The Perfetto timeline of golden traces, decoded by decode_perfetto.py (its own protobuf reading),
is the one in expected/*.slices.jsonl (every slice: track, time, duration, name, categories,
annotations, flows; made by the writer before it interned its texts), and its texts are interned:
each defined once in its sequence (decode_perfetto.py fails otherwise), none written in full.
  check_timeline_decoded.py ASYNCWATCH GOLDEN_DIR
Temporary files in a TemporaryDirectory (removed)."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# expected file -> the timeline's arguments (paths relative to the golden directory)
CASES = {
    "mixed+fork": ["mixed.awtrace", "fork"],
    "seed_gpu_times.pageable": ["h200/seed_gpu_times.pageable.awtrace"],
    "callbacks": ["sim/callbacks.awtrace"],
    "nvtx.findings-only": ["--findings-only", "nvtx.awtrace"],
}


def main():
    aw, golden = os.path.abspath(sys.argv[1]), sys.argv[2]
    failures = []
    decoder = [sys.executable, os.path.join(HERE, "decode_perfetto.py")]
    with tempfile.TemporaryDirectory(prefix="aw-timeline-decoded-") as d:
        for name, args in CASES.items():
            out = os.path.join(d, name + ".pftrace")
            r = subprocess.run([aw, "timeline", "-o", out] + args, cwd=golden, capture_output=True, text=True)
            if r.returncode != 0:
                failures.append(f"{name}: timeline exited {r.returncode}: {r.stderr.strip()}")
                continue
            summary = subprocess.run(decoder + [out], capture_output=True, text=True)
            if summary.returncode != 0:
                failures.append(f"{name}: decode_perfetto found problems:\n{summary.stdout[-2000:]}")
                continue
            s = json.loads(summary.stdout)
            if s["interned_texts"] == 0 or s["inline_texts"] != 0:
                failures.append(f"{name}: {s['interned_texts']} texts interned, {s['inline_texts']} written in full")
                continue
            got = subprocess.run(decoder + ["--slices", out], capture_output=True, text=True).stdout.splitlines()
            with open(os.path.join(HERE, "expected", name + ".slices.jsonl")) as f:
                want = f.read().splitlines()
            if got != want:
                missing = [l for l in want if l not in set(got)][:3]
                extra = [l for l in got if l not in set(want)][:3]
                failures.append(f"{name}: {len(got)} slices, expected {len(want)}; missing {missing}; unexpected {extra}")
            else:
                print(f"ok: {name}: {len(got)} slices as expected, {s['interned_texts']} texts interned, "
                      f"{os.path.getsize(out)} bytes")
    for f in failures:
        print("FAILED:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
