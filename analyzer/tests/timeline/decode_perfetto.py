#!/usr/bin/env python3
"""A tiny hand decoder of the binary Perfetto traces `asyncwatch timeline --format perfetto` writes
(protobuf wire format; field numbers of perfetto/trace/*.proto), independent of the writer's code.
Prints a JSON summary (tracks, slices per track, flows, flagged slices) and checks the structure:
every packet parses, every slice begin has its end on the same track, not before it, every flow that
ends also starts, every interned text (event names, categories, debug annotation names and string
values) is defined once per sequence, after its incremental state was cleared and before it is
used. `--expect key=N` (>= N) checks counts: processes, threads, gpu_tracks, gpu_slices, flows,
flagged, slices. `--slices` prints instead every slice, texts resolved, one JSON object a line,
sorted (what the timeline shows, whatever its encoding and its packets' order).
Exit status 1 on a failed check."""
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


# InternedData fields (perfetto/trace/interned_data/interned_data.proto) -> the kind of text.
INTERNED_KINDS = {1: "category", 2: "name", 3: "annotation_name", 29: "annotation_value"}


class Sequence:
    """The interned texts of one packet sequence (trusted_packet_sequence_id)."""

    def __init__(self):
        self.cleared = False
        self.tables = {k: {} for k in INTERNED_KINDS.values()}  # kind -> iid -> text
        self.texts = {k: set() for k in INTERNED_KINDS.values()}  # kind -> texts defined


def main():
    args = sys.argv[1:]
    expect = {}
    list_slices = False
    while args and args[0] in ("--expect", "--slices"):
        if args[0] == "--slices":
            list_slices = True
            args = args[1:]
            continue
        k, v = args[1].split("=")
        expect[k] = int(v)
        args = args[2:]
    data = open(args[0], "rb").read()
    sequences = {}  # trusted_packet_sequence_id -> Sequence
    all_slices = []  # (track uuid, ts, name, categories, args) of each begin, resolved
    interned_texts = 0
    inline_texts = [0]  # event texts written in full (not interned)
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
        seq = sequences.setdefault(first(p, 10, 0), Sequence())
        flags = first(p, 13, 0)
        if flags & 1:  # SEQ_INCREMENTAL_STATE_CLEARED
            seq.cleared = True
            seq.tables = {k: {} for k in INTERNED_KINDS.values()}
            seq.texts = {k: set() for k in INTERNED_KINDS.values()}
        if (flags & 2) and not seq.cleared:  # SEQ_NEEDS_INCREMENTAL_STATE
            problems.append("a packet needs incremental state before the sequence cleared it")
        interned = first(p, 12)
        if interned is not None:
            if not seq.cleared:
                problems.append("interned data before the sequence cleared its incremental state")
            for k, _, entry in fields(interned):
                kind = INTERNED_KINDS.get(k)
                if kind is None:
                    continue
                ef = fields(entry)
                iid, text = first(ef, 1), first(ef, 2, b"").decode()
                if iid in seq.tables[kind]:
                    problems.append(f"{kind} iid {iid} interned twice")
                if text in seq.texts[kind]:
                    problems.append(f"{kind} {text!r} interned twice in one sequence")
                seq.tables[kind][iid] = text
                seq.texts[kind].add(text)
                interned_texts += 1

        def text(fs, field, field_iid, kind, default=""):
            """A field's text, in full or by its interned iid."""
            for f, _, v in fs:
                if f == field:
                    inline_texts[0] += 1
                    return v.decode()
                if f == field_iid:
                    if v not in seq.tables[kind]:
                        problems.append(f"{kind} iid {v} used before it was interned")
                        return default
                    return seq.tables[kind][v]
            return default
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
                nm = text(e, 23, 10, "name")
                s = names.setdefault(track, [])
                if len(s) < 5 and nm not in s:
                    s.append(nm)
                cats = [v.decode() for k, _, v in e if k == 22]
                inline_texts[0] += len(cats)
                for k, _, v in e:
                    if k == 3:  # category_iids
                        if v in seq.tables["category"]:
                            cats.append(seq.tables["category"][v])
                        else:
                            problems.append(f"category iid {v} used before it was interned")
                annotations = {}
                for k, _, v in e:
                    if k != 4:
                        continue
                    a = fields(v)
                    key = text(a, 10, 1, "annotation_name")
                    value = first(a, 3)
                    annotations[key] = value if value is not None else text(a, 6, 17, "annotation_value")
                if any("flagged" in c for c in cats):
                    flagged += 1
                    for need in ("rule", "message", "call_site"):
                        if need not in annotations:
                            problems.append(f"flagged slice {nm!r} has no {need} annotation")
                if list_slices:
                    all_slices.append({"track": track, "ts": ts, "name": nm, "categories": cats, "args": annotations,
                                       "flow_out": [v for k, _, v in e if k == 47],
                                       "flow_in": [v for k, _, v in e if k == 48]})
                flows_out.update(v for k, _, v in e if k == 47)
                flows_in.update(v for k, _, v in e if k == 48)
            elif typ == 2:
                st = open_slices.get(track)
                if not st:
                    problems.append(f"slice end without begin on track {track}")
                else:
                    begin = st.pop()
                    if begin > ts:
                        problems.append(f"slice ends before it begins on track {track}")
                    elif list_slices:
                        # The begin this end closes: the innermost open one (the writer writes a
                        # slice's end right after its begin).
                        for sl in reversed(all_slices):
                            if sl["track"] == track and sl["ts"] == begin and "dur" not in sl:
                                sl["dur"] = ts - begin
                                break
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
    summary["interned_texts"] = interned_texts
    summary["inline_texts"] = inline_texts[0]
    for k, n in expect.items():
        if summary.get(k, 0) < n:
            problems.append(f"{k} = {summary.get(k, 0)}, expected at least {n}")
    if list_slices:
        def track_name(uuid):
            t = tracks.get(uuid, {})
            return t.get("name", str(uuid))
        lines = sorted(json.dumps(dict(sl, track=track_name(sl["track"])), sort_keys=True) for sl in all_slices)
        print("\n".join(lines))
    else:
        print(json.dumps(summary, indent=1))
    for p in problems:
        print("FAILED:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
