"""bench/chart.py — chart.svg: per workload, grouped bars of each
allocator's time per pair as a ratio to glibc, on a log axis (hover a bar
for its numbers). Takes the results as bench/report.py describes them; a
failed run has no bar, and its reason is written under the panel's title.
"""

import math

from report import fmt_ns


PALETTE = {
    "glibc": "#7f7f7f",
    "tcmalloc": "#ff7f0e",
    "jemalloc": "#d62728",
    "mimalloc": "#8c564b",
}
STAGE_COLOURS = ["#1f77b4", "#2ca02c", "#17becf", "#9467bd", "#e377c2", "#bcbd22"]


def colours(allocators):
    result, n = {}, 0
    for a in allocators:
        if a.name in PALETTE:
            result[a.name] = PALETTE[a.name]
        else:
            result[a.name] = STAGE_COLOURS[n % len(STAGE_COLOURS)]
            n += 1
    return result


def nice_ticks(lo, hi):
    ticks = []
    for exp in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
        for m in (1, 2, 5):
            v = m * 10.0 ** exp
            if lo <= v <= hi:
                ticks.append(v)
    return ticks


def esc(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def write_chart(path, results, workloads, info, threads, allocators, machine):
    colour = colours(allocators)
    width, panel_h = 980, 300
    left, right, top, bottom = 70, 20, 50, 45
    # The legend: one swatch per allocator, wrapped to the chart's width; the
    # stages' rows (sized API, linked in) on a row of their own, labelled.
    legend, x, row = [], left, 0
    sized_label = None
    for a in allocators:
        if a.sized and sized_label is None:
            if x > left:
                x, row = left, row + 1
            sized_label = (x, row)
            x += 7 * len("sized API, linked in:") + 10
        step = 30 + 7 * len(a.name)
        if x + step > width - right and x > left:
            x, row = left, row + 1
        legend.append((a, x, row))
        x += step
    legend_h = 10 + 20 * (row + 1)
    machine_lines = machine.split("; ")  # the hardware, then how busy it was
    title_h = 34 + 16 * len(machine_lines)
    height = title_h + legend_h + panel_h * len(workloads) + 10
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">' % (width, height, width, height),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="22" font-size="16" font-weight="bold">hcmalloc bench: time per '
           'malloc+free pair as a ratio to glibc (log scale; below 1 is faster)</text>' % left]
    for n, text in enumerate(machine_lines):
        out.append('<text x="%d" y="%d" fill="#555">%s</text>' % (left, 40 + 16 * n, esc(text)))
    if sized_label is not None:
        out.append('<text x="%d" y="%d" fill="#555">sized API, linked in:</text>'
                   % (sized_label[0], title_h + 14 + 20 * sized_label[1]))
    for a, x, row in legend:
        y = title_h + 4 + 20 * row
        out.append('<rect x="%d" y="%d" width="12" height="12" fill="%s"/>' % (x, y, colour[a.name]))
        out.append('<text x="%d" y="%d">%s</text>' % (x + 16, y + 10, esc(a.name)))
    for i, wl in enumerate(workloads):
        y0 = title_h + legend_h + i * panel_h
        rows = results.get(wl, {})
        ratios = [r["ratio"] for r in rows.values() if not r.get("failed") and r["ratio"]]
        if not ratios:
            continue
        lo = min(min(ratios), 1.0) / 1.3
        hi = max(max(ratios), 1.0) * 1.3
        ticks = nice_ticks(lo, hi)
        lo, hi = min([lo] + ticks), max([hi] + ticks)
        plot_top, plot_bottom = y0 + top, y0 + panel_h - bottom
        plot_w = width - left - right

        def y_of(v):
            f = (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
            return plot_bottom - f * (plot_bottom - plot_top)

        out.append('<text x="%d" y="%d" font-size="14" font-weight="bold">%s</text>'
                   % (left, y0 + 30, esc(wl)))
        out.append('<text x="%d" y="%d" fill="#555">%s</text>'
                   % (left + 10 + 9 * len(wl), y0 + 30, esc(info[wl][0])))
        failures = ["%s, %d thread%s: %s" % (name, t, "" if t == 1 else "s", r["reason"])
                    for (t, name), r in sorted(rows.items()) if r.get("reason")]
        if failures:
            out.append('<text x="%d" y="%d" fill="#b00">failed, no bar: %s</text>'
                       % (left, y0 + 46, esc("; ".join(failures))))
        for t in ticks:
            y = y_of(t)
            stroke = "#000" if t == 1 else "#ddd"
            out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>' % (left, y, left + plot_w, y, stroke))
            out.append('<text x="%d" y="%.1f" text-anchor="end">%sx</text>' % (left - 6, y + 4, "%g" % t))
        group_w = plot_w / len(threads)
        present = [a for a in allocators if any((t, a.name) in rows for t in threads)]
        bar_w = group_w * 0.8 / max(len(present), 1)
        for g, t in enumerate(threads):
            gx = left + g * group_w + group_w * 0.1
            label = "%d thread%s" % (t, "" if t == 1 else "s")
            if wl == "xthread":
                label = "%d pair%s" % (t, "" if t == 1 else "s")
            out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>'
                       % (left + (g + 0.5) * group_w, plot_bottom + 18, label))
            for k, a in enumerate(present):
                r = rows.get((t, a.name))
                if r is None or r.get("failed") or not r["ratio"]:
                    continue
                y1, y2 = sorted((y_of(1.0), y_of(r["ratio"])))
                tip = "%s, %s: %.2fx glibc, %s ns/pair%s" % (
                    a.name, label, r["ratio"], fmt_ns(r["ns"]), " (cut at the time limit)" if r["cut"] else "")
                out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s</title></rect>'
                           % (gx + k * bar_w, y1, bar_w * 0.9, max(y2 - y1, 1.5), colour[a.name], esc(tip)))
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#000"/>' % (left, plot_top, left, plot_bottom))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")

