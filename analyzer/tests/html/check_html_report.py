#!/usr/bin/env python3
"""Opens an asyncwatch HTML report in headless Chromium and checks what a reader would see.

  check_html_report.py --chromium PATH --html REPORT.html --findings N [--stream-lanes]

From the DOM Chromium built (--dump-dom, in the same start as the screenshot): the summary line, N finding articles, the timeline SVG
with host lanes (and stream lanes), flagged bars with their tooltips. From its screenshot
(--screenshot, decoded here with zlib; no Pillow): the page is not blank, and a horizontal run of
at least 100 pixels in the warning colour lies right of the lane labels (a flagged call's bar: the
legend swatch and a finding's border are narrower).

Then the same checks run on a broken copy of the page (no SVG, another colour) and must fail
there: the test can fail. Chromium's profile and the files live in a mkdtemp removed at the end.
Exit 0: all good; 1: a check failed; 77: no Chromium (skipped).
"""
import argparse
import html.parser
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

WARNING = (0xf7, 0x67, 0x07)  # report_html.cpp, kSwatches: sev-warning
LABEL_WIDTH = 230             # report_html.cpp, kLabelWidth: the lane labels' column


class Dom(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.counts = {}
        self.ids = set()
        self.text = []
        self.titles = 0
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        for c in (a.get("class") or "").split():
            key = "%s.%s" % (tag, c)
            self.counts[key] = self.counts.get(key, 0) + 1
        self._in_title = tag == "title"

    def handle_endtag(self, tag):
        self._in_title = False

    def handle_data(self, data):
        self.text.append(data)
        if self._in_title and data.strip():
            self.titles += 1


def chromium(exe, tmp, args):
    profile = tempfile.mkdtemp(prefix="profile-", dir=tmp)
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           "--user-data-dir=" + profile] + args
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    if r.returncode != 0:
        raise RuntimeError("chromium exited %d: %s" % (r.returncode, r.stderr.decode(errors="replace")[-2000:]))
    return r.stdout.decode("utf-8", errors="replace")


def _add_bytes(a, b, n):
    """Bytewise (a + b) mod 256 of two n-byte rows held as integers (no carry between bytes)."""
    low = int.from_bytes(b"\x7f" * n, "big")
    return ((a & low) + (b & low)) ^ ((a ^ b) & (low << 1 | int.from_bytes(b"\x01" * n, "big")) & ~low)


def decode_png(data):
    """(width, height, bytes per pixel, rows as bytes): 8-bit RGB or RGBA, non-interlaced. The Up and
    Sub filters run on whole rows as integers (bytewise sums), Average and Paeth byte by byte."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, width, height, bpp = 8, [], 0, 0, 3
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in (2, 6) or interlace:
                raise ValueError("unsupported PNG (depth %d, colour type %d)" % (depth, colour))
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    if len(raw) != height * (stride + 1):
        raise ValueError("PNG data of the wrong size")
    rows, prev = [], bytes(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)]
        if f == 2:
            line = _add_bytes(int.from_bytes(line, "big"), int.from_bytes(prev, "big"), stride).to_bytes(stride, "big")
        elif f == 1:  # a prefix sum per channel: log2(width) shifted bytewise additions
            v, shift = int.from_bytes(line, "big"), bpp
            while shift < stride:
                v = _add_bytes(v, v >> (8 * shift), stride)
                shift *= 2
            line = v.to_bytes(stride, "big")
        elif f in (3, 4):
            out = bytearray(line)
            for i in range(stride):
                left = out[i - bpp] if i >= bpp else 0
                up = prev[i]
                if f == 3:
                    out[i] = (out[i] + ((left + up) >> 1)) & 0xff
                else:
                    ul = prev[i - bpp] if i >= bpp else 0
                    p = left + up - ul
                    pa, pb, pc = abs(p - left), abs(p - up), abs(p - ul)
                    out[i] = (out[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else ul)) & 0xff
            line = bytes(out)
        elif f != 0:
            raise ValueError("bad PNG filter %d" % f)
        rows.append(line)
        prev = line
    return width, height, bpp, rows


def check(exe, tmp, page, findings, stream_lanes):
    """The failed checks on `page` (empty: all good)."""
    failed = []
    url = "file://" + os.path.abspath(page)
    shot = os.path.join(tmp, "shot.png")
    dom = Dom()  # one start of Chromium: the DOM on stdout, the screenshot into `shot`
    dom.feed(chromium(exe, tmp, ["--dump-dom", "--screenshot=" + shot, "--window-size=1400,1000", url]))
    text = " ".join(dom.text)
    want = [("section#summary", "summary" in dom.ids), ("summary line", "summary:" in text),
            ("%d findings" % findings, dom.counts.get("article.finding", 0) == findings),
            ("timeline svg", dom.counts.get("svg.timeline", 0) >= 1),
            ("host lanes", dom.counts.get("g.host-lane", 0) >= 1),
            ("flagged bars", dom.counts.get("rect.flagged", 0) >= 1),
            ("tooltips", dom.titles >= 1)]
    if stream_lanes:
        want.append(("stream lanes", dom.counts.get("g.stream-lane", 0) >= 1))
        want.append(("overlap table", dom.counts.get("table.overlap", 0) == 1))
    failed += ["DOM: " + name for name, ok in want if not ok]
    with open(shot, "rb") as f:
        width, height, bpp, rows = decode_png(f.read())
    os.unlink(shot)
    colours = set()
    for r in rows[::7]:
        colours.update(r[x:x + 3] for x in range(0, len(r), 7 * bpp))
    if len(colours) < 8:
        failed.append("screenshot: blank (%d colours)" % len(colours))
    # The longest horizontal run of the warning colour right of the lane labels.
    pixel = bytes(WARNING) + (b"\xff" if bpp == 4 else b"")
    longest = 0
    for r in rows:
        x = r.find(pixel, LABEL_WIDTH * bpp)
        while x >= 0:
            if x % bpp == 0:
                end = x
                while r[end:end + bpp] == pixel:
                    end += bpp
                longest = max(longest, (end - x) // bpp)
                x = r.find(pixel, end)
            else:
                x = r.find(pixel, x + 1)
    if longest < 100:
        failed.append("screenshot: no flagged bar in the warning colour (longest run %d px)" % longest)
    return failed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--chromium", required=True)
    ap.add_argument("--html", required=True)
    ap.add_argument("--findings", type=int, required=True)
    ap.add_argument("--stream-lanes", action="store_true")
    a = ap.parse_args()
    exe = shutil.which(a.chromium) or (a.chromium if os.access(a.chromium, os.X_OK) else None)
    if not exe:
        print("no chromium: skipped")
        return 77
    tmp = tempfile.mkdtemp(prefix="asyncwatch-html-")
    try:
        failed = check(exe, tmp, a.html, a.findings, a.stream_lanes)
        for f in failed:
            print("FAILED:", f)
        # The same checks must fail on a broken page: no SVG, and the warning colour changed.
        with open(a.html, encoding="utf-8") as f:
            good = f.read()
        start, end = good.find("<svg"), good.rfind("</svg>")
        broken = good[:start] + good[end + 6:] if start >= 0 and end > start else good
        broken = broken.replace("#f76707", "#123456")
        broken_page = os.path.join(tmp, "broken.html")
        with open(broken_page, "w", encoding="utf-8") as f:
            f.write(broken)
        caught = check(exe, tmp, broken_page, a.findings, a.stream_lanes)
        if not any(c.startswith("DOM: timeline") for c in caught) or not any("warning colour" in c for c in caught):
            print("FAILED: the checks did not catch the broken page:", caught)
            failed.append("self-test")
        else:
            print("the broken page fails as it should:", "; ".join(caught))
        print("ok" if not failed else "%d checks failed" % len(failed))
        return 1 if failed else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
