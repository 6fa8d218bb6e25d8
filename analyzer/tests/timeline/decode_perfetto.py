#!/usr/bin/env python3
"""A tiny hand decoder of the binary Perfetto traces `asyncwatch timeline --format perfetto` writes
(protobuf wire format; field numbers of perfetto/trace/*.proto), independent of the writer's code.
Prints a JSON summary (tracks, slices per track, flows, flagged slices) and checks the structure:
every packet parses, every slice begin has its end on the same track, not before it, every flow that
ends also starts. `--expect key=N` (>= N) checks counts: processes, threads, gpu_tracks, gpu_slices,
flows, flagged, slices. Exit status 1 on a failed check."""
import json
import sys


def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def fields(b):
    """(field, wire, value) of a message; value is int or bytes."""
    i = 0
    out = []
    while i < len(b):
        key, i = varint(b, i)
        f, w = key >> 3, key & 7
        if w == 0:
            v, i = varint(b, i)
        elif w == 1:
            v = int.from_bytes(b[i:i + 8], "little")
            i += 8
        elif w == 2:
            n, i = varint(b, i)
            v = bytes(b[i:i + n])
            if len(v) != n:
                raise ValueError("truncated length-delimited field")
            i += n
        elif w == 5:
            v = int.from_bytes(b[i:i + 4], "little")
            i += 4
        else:
            raise ValueError(f"wire type {w}")
        out.append((f, w, v))
    return out


def first(fs, n, default=None):
    for f, _, v in fs:
        if f == n:
            return v
    return default


def main():
    args = sys.argv[1:]
    expect = {}
    while args and args[0] == "--expect":
        k, v = args[1].split("=")
        expect[k] = int(v)
        args = args[2:]
    data = open(args[0], "rb").read()
    tracks = {}  # uuid -> {kind, name, parent}
    open_slices = {}  # uuid -> [ts...]
    slices = {}  # uuid -> count
    names = {}  # uuid -> set of slice names (first few)
    flows_out, flows_in = set(), set()
    flagged = 0
    problems = []
    for f, w, packet in fields(data):
        if f != 1 or w != 2:
            problems.append(f"top-level field {f} is not Trace.packet")
            continue
        p = fields(packet)
        td = first(p, 60)
        te = first(p, 11)
        ts = first(p, 8, 0)
        if td is not None:
            d = fields(td)
            uuid = first(d, 1)
            proc, thr = first(d, 3), first(d, 4)
            if proc is not None:
                pd = fields(proc)
                tracks[uuid] = {"kind": "process", "name": first(pd, 6, b"").decode(), "pid": first(pd, 1)}
            elif thr is not None:
                t = fields(thr)
                tracks[uuid] = {"kind": "thread", "name": first(t, 5, b"").decode(), "tid": first(t, 2)}
            else:
                tracks[uuid] = {"kind": "child", "name": first(d, 2, b"").decode(), "parent": first(d, 5)}
        elif te is not None:
            e = fields(te)
            typ, track = first(e, 9), first(e, 11)
            if track not in tracks:
                problems.append(f"event on undeclared track {track}")
            if typ == 1:
                open_slices.setdefault(track, []).append(ts)
                slices[track] = slices.get(track, 0) + 1
                nm = first(e, 23, b"").decode()
                s = names.setdefault(track, [])
                if len(s) < 5 and nm not in s:
                    s.append(nm)
                cats = [v.decode() for k, _, v in e if k == 22]
                if any("flagged" in c for c in cats):
                    flagged += 1
                    keys = {first(fields(v), 10, b"").decode() for k, _, v in e if k == 4}
                    for need in ("rule", "message", "call_site"):
                        if need not in keys:
                            problems.append(f"flagged slice {nm!r} has no {need} annotation")
                flows_out.update(v for k, _, v in e if k == 47)
                flows_in.update(v for k, _, v in e if k == 48)
            elif typ == 2:
                st = open_slices.get(track)
                if not st:
                    problems.append(f"slice end without begin on track {track}")
                elif st.pop() > ts:
                    problems.append(f"slice ends before it begins on track {track}")
    for t, st in open_slices.items():
        if st:
            problems.append(f"{len(st)} slices never end on track {t}")
    for fl in flows_in - flows_out:
        problems.append(f"flow {fl:#x} ends but never starts")
    gpu = [u for u, t in tracks.items() if t["kind"] == "child"]
    summary = {
        "processes": sum(t["kind"] == "process" for t in tracks.values()),
        "threads": sum(t["kind"] == "thread" for t in tracks.values()),
        "gpu_tracks": len(gpu),
        "gpu_slices": sum(slices.get(u, 0) for u in gpu),
        "slices": sum(slices.values()),
        "flows": len(flows_in & flows_out),
        "flagged": flagged,
        "tracks": {tracks[u]["name"]: {"slices": slices.get(u, 0), "names": names.get(u, [])} for u in tracks if u in slices},
    }
    for k, n in expect.items():
        if summary.get(k, 0) < n:
            problems.append(f"{k} = {summary.get(k, 0)}, expected at least {n}")
    print(json.dumps(summary, indent=1))
    for p in problems:
        print("FAILED:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
