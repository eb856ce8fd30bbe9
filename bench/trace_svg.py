#!/usr/bin/env python3
"""bench/trace_svg.py — draws a tier-traffic trace (common/trace.h) as SVG.

usage: python3 bench/trace_svg.py TRACE [-o OUT.svg] [--title TEXT]

TRACE is what a build with the trace writes (HCMALLOC_TRACE=FILE with
stage4_reclaim:libhcmalloc_trace.so, or hc_trace_write). The picture has
three parts:
  1. the share of malloc and free calls served by each tier: the thread
     cache (hits), the central cache (misses it served from its own
     objects), the page cache (misses that needed a span) and the OS (the
     page cache had to map a new region);
  2. a timeline per tier: each event per time bucket, on a log scale;
  3. a timeline per size class (the busiest ones): how many of the class's
     calls per bucket, and what share missed the thread cache.
`bazel run //bench -- --heapmap WORKLOAD` runs it; nothing beyond python3.
"""

import argparse
import math
import sys
from xml.sax.saxutils import escape

TIERS = [  # (name, colour)
    ("thread cache", "#59a14f"),
    ("central cache", "#4e79a7"),
    ("page cache", "#f28e2b"),
    ("OS", "#e15759"),
]
PANELS = [  # (tier, [(event, label, colour)])
    ("thread cache", [("tc_alloc_hit", "malloc hits", "#59a14f"), ("tc_free_hit", "free hits", "#8cd17d"),
                      ("tc_refill", "refills (malloc misses)", "#e15759"),
                      ("tc_overflow", "overflows (free misses)", "#f1a2a9")]),
    ("central cache", [("cc_fetch", "batches to threads", "#4e79a7"),
                       ("cc_return", "batches back", "#a0cbe8")]),
    ("page cache", [("span_carve", "spans out", "#f28e2b"), ("span_return", "spans back", "#ffbe7d"),
                    ("pc_split", "splits", "#b07aa1"), ("pc_merge", "merges", "#d4a6c8"),
                    ("pc_grow", "regions mapped", "#e15759"), ("pc_release", "releases to the OS", "#79706e")]),
]
WIDTH = 1000
PLOT_X = 170
PLOT_W = 640


class Trace:
    def __init__(self):
        self.bucket_ms = 10
        self.buckets = 0
        self.events = []
        self.class_size = {}
        self.totals = {}  # (event name, cls) -> n
        self.series = {}  # (event name, cls) -> {bucket: n}

    def total(self, event, cls=None):
        return sum(n for (e, c), n in self.totals.items() if e == event and (cls is None or c == cls))

    def per_bucket(self, event, cls=None):
        out = [0] * max(self.buckets, 1)
        for (e, c), by_bucket in self.series.items():
            if e == event and (cls is None or c == cls):
                for b, n in by_bucket.items():
                    out[b] += n
        return out


def parse(text):
    t = Trace()
    lines = text.splitlines()
    if not lines or lines[0].strip() != "hcmalloc-trace 1":
        raise ValueError("not an hcmalloc trace (first line: %r)" % (lines[0] if lines else ""))
    for line in lines[1:]:
        f = line.split()
        if not f:
            continue
        if f[0] == "bucket_ms":
            t.bucket_ms = int(f[1])
        elif f[0] == "buckets":
            t.buckets = int(f[1])
        elif f[0] == "event":
            t.events.append(f[1])
        elif f[0] == "class":
            t.class_size[int(f[1])] = int(f[2])
        elif f[0] == "total":
            t.totals[(t.events[int(f[1])], int(f[2]))] = int(f[3])
        elif f[0] == "b":
            key = (t.events[int(f[2])], int(f[3]))
            t.series.setdefault(key, {})[int(f[1])] = int(f[4])
    return t


def size_label(size):
    if size == 0:
        return "large"
    if size >= 1024 and size % 1024 == 0:
        return "%d KiB" % (size // 1024)
    return "%d B" % size


def shares(t):
    """(malloc shares, free shares): counts per tier, in TIERS order."""
    small_carves = sum(n for (e, c), n in t.totals.items() if e == "span_carve" and c != 0)
    small_returns = sum(n for (e, c), n in t.totals.items() if e == "span_return" and c != 0)
    grows = t.total("pc_grow")
    refills = t.total("tc_refill")
    large_out = t.total("span_carve", 0)
    overflows = t.total("tc_overflow")
    large_back = t.total("span_return", 0)
    mallocs = [t.total("tc_alloc_hit"), max(refills - small_carves, 0),
               max(small_carves + large_out - grows, 0), grows]
    frees = [t.total("tc_free_hit"), max(overflows - small_returns, 0), small_returns + large_back, 0]
    return mallocs, frees


class Svg:
    def __init__(self):
        self.parts = []

    def add(self, s):
        self.parts.append(s)

    def text(self, x, y, s, **attrs):
        extra = "".join(' %s="%s"' % (k.replace("_", "-"), v) for k, v in attrs.items())
        self.add('<text x="%.1f" y="%.1f"%s>%s</text>' % (x, y, extra, escape(s)))

    def rect(self, x, y, w, h, fill, title=None):
        t = "<title>%s</title>" % escape(title) if title else ""
        self.add('<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s">%s</rect>' % (x, y, w, h, fill, t))


def share_bar(svg, y, label, counts):
    total = sum(counts) or 1
    svg.text(20, y + 15, label, font_weight="bold")
    x = PLOT_X
    for (tier, colour), n in zip(TIERS, counts):
        w = PLOT_W * n / total
        if n:
            svg.rect(x, y, max(w, 0.5), 22, colour, "%s: %s calls (%.2f%%)" % (tier, "{:,}".format(n), 100.0 * n / total))
        if w > 60:
            svg.text(x + 4, y + 15, "%.1f%%" % (100.0 * n / total), fill="white", font_weight="bold")
        x += w
    svg.text(PLOT_X + PLOT_W + 8, y + 15, "{:,} calls".format(sum(counts)))


def log_y(n, top, height):
    return height * (1 - math.log10(1 + n) / math.log10(1 + top)) if top > 0 else height


def time_axis(svg, y, t):
    n = max(t.buckets, 1)
    total_ms = n * t.bucket_ms
    step = 10 ** max(0, int(math.log10(max(total_ms, 1))))
    if total_ms / step < 4:
        step //= 2 if step >= 2 else 1
    ms = 0
    while ms <= total_ms:
        x = PLOT_X + PLOT_W * ms / total_ms
        svg.add('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/>' % (x, y, x, y + 4))
        svg.text(x, y + 16, "%g ms" % ms if ms < 1000 else "%g s" % (ms / 1000), text_anchor="middle",
                 font_size="10", fill="#555")
        ms += max(step, 1)


def panel(svg, y, height, t, tier, series):
    n = max(t.buckets, 1)
    data = [(label, colour, t.per_bucket(event), t.total(event)) for event, label, colour in series]
    top = max([max(d[2]) for d in data] + [1])
    svg.text(20, y + 14, tier, font_weight="bold")
    svg.add('<rect x="%d" y="%.1f" width="%d" height="%d" fill="#fafafa" stroke="#ccc"/>' % (PLOT_X, y, PLOT_W, height))
    decade = 1
    while decade <= top:
        gy = y + log_y(decade, top, height)
        svg.add('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e4e4e4"/>' % (PLOT_X, gy, PLOT_X + PLOT_W, gy))
        svg.text(PLOT_X - 4, gy + 4, "{:,}".format(decade), text_anchor="end", font_size="9", fill="#777")
        decade *= 10
    for i, (label, colour, values, total) in enumerate(data):
        points = []
        for b, v in enumerate(values):
            x0 = PLOT_X + PLOT_W * b / n
            x1 = PLOT_X + PLOT_W * (b + 1) / n
            vy = y + log_y(v, top, height)
            points.append("%.1f,%.1f %.1f,%.1f" % (x0, vy, x1, vy))
        svg.add('<polyline fill="none" stroke="%s" stroke-width="1.6" points="%s"><title>%s</title></polyline>'
                % (colour, " ".join(points), escape(label)))
        ly = y + 12 + 14 * i
        svg.rect(PLOT_X + PLOT_W + 8, ly - 8, 10, 10, colour)
        svg.text(PLOT_X + PLOT_W + 22, ly, "%s: %s" % (label, "{:,}".format(total)), font_size="10")
    svg.text(20, y + 30, "per %d ms, log scale" % t.bucket_ms, font_size="10", fill="#777")


def class_rows(svg, y, t, limit):
    """One row per busy class: its calls per bucket (darkness) and misses (red)."""
    n = max(t.buckets, 1)
    calls = {}
    for (e, c), total in t.totals.items():
        if e in ("tc_alloc_hit", "tc_refill") or (e == "span_carve" and c == 0):
            calls[c] = calls.get(c, 0) + total
    busiest = sorted(calls, key=lambda c: -calls[c])[:limit]
    busiest.sort()
    svg.text(20, y, "Per size class: malloc calls per %d ms (grey: darker = more; red bar: the share that missed the thread cache)" % t.bucket_ms,
             font_weight="bold")
    y += 10
    row_h = 16
    for i, c in enumerate(busiest):
        ry = y + i * (row_h + 3)
        if c == 0:
            hits = [0] * n
            misses = t.per_bucket("span_carve", 0)
        else:
            hits = t.per_bucket("tc_alloc_hit", c)
            misses = t.per_bucket("tc_refill", c)
        per = [h + m for h, m in zip(hits, misses)]
        top = max(per + [1])
        svg.text(PLOT_X - 6, ry + 12, "%s%s" % ("class %d, " % c if c else "", size_label(t.class_size.get(c, 0))),
                 text_anchor="end", font_size="11")
        for b in range(n):
            if per[b] == 0:
                continue
            x0 = PLOT_X + PLOT_W * b / n
            w = PLOT_W / n
            level = math.log10(1 + per[b]) / math.log10(1 + top)
            miss = misses[b] / per[b]
            grey = int(225 - 150 * level)
            tip = "%s, bucket %d: %s calls, %.1f%% missed" % (size_label(t.class_size.get(c, 0)), b,
                                                            "{:,}".format(per[b]), 100 * miss)
            svg.rect(x0, ry, max(w, 0.6), row_h, "#%02x%02x%02x" % (grey, grey, grey), tip)
            if misses[b]:  # the misses: a red bar from the bottom, its height their share
                h = max(row_h * miss, 1.5)
                svg.rect(x0, ry + row_h - h, max(w, 0.6), h, "#d62728", tip)
        total_calls = sum(per)
        total_miss = sum(misses)
        svg.text(PLOT_X + PLOT_W + 8, ry + 12, "{:,} calls, {:.1f}% hits".format(
            total_calls, 100.0 * (total_calls - total_miss) / total_calls if total_calls else 0), font_size="10")
    return y + len(busiest) * (row_h + 3)


def draw(t, title):
    svg = Svg()
    svg.text(20, 28, title, font_size="18", font_weight="bold")
    svg.text(20, 48, "%d buckets of %d ms; counts from common/trace.h (hits are flushed per thread every "
                     "1,024, so a thread's last few may be missing)" % (t.buckets, t.bucket_ms),
             font_size="11", fill="#555")
    mallocs, frees = shares(t)
    svg.text(20, 78, "Share of calls served by each tier", font_weight="bold", font_size="14")
    x = PLOT_X
    for tier, colour in TIERS:
        svg.rect(x, 86, 12, 12, colour)
        svg.text(x + 16, 96, tier, font_size="11")
        x += 120
    share_bar(svg, 106, "malloc", mallocs)
    share_bar(svg, 134, "free", frees)
    y = 180
    svg.text(20, y, "Timeline per tier", font_weight="bold", font_size="14")
    y += 10
    for tier, series in PANELS:
        height = max(70, 14 * len(series) + 10)
        panel(svg, y, height, t, tier, series)
        y += height + 8
    time_axis(svg, y - 8, t)
    y += 40
    y = class_rows(svg, y, t, 12)
    time_axis(svg, y, t)
    height = int(y + 30)
    head = ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
            'font-family="DejaVu Sans, Arial, sans-serif" font-size="12">\n'
            '<rect width="100%%" height="100%%" fill="white"/>\n' % (WIDTH, height, WIDTH, height))
    return head + "\n".join(svg.parts) + "\n</svg>\n"


def main(argv):
    p = argparse.ArgumentParser(description="Draws an hcmalloc tier-traffic trace as SVG.")
    p.add_argument("trace")
    p.add_argument("-o", "--out", default=None, help="output file (default: stdout)")
    p.add_argument("--title", default="hcmalloc tier traffic")
    args = p.parse_args(argv)
    with open(args.trace) as f:
        t = parse(f.read())
    picture = draw(t, args.title)
    if args.out:
        with open(args.out, "w") as f:
            f.write(picture)
    else:
        sys.stdout.write(picture)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
