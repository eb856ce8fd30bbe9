"""bench/bench.py — `bazel run //bench`: every stage against glibc and the peers.

Runs each workload of bench_driver.c for every allocator it finds. The
headline rows run the same calls, malloc/free, for every allocator: glibc's
malloc, hcmalloc's drop-in (stage4_dropin, stage 4's libhcmalloc.so) and
tcmalloc, jemalloc and mimalloc when their Debian libraries are present (the
plain driver with LD_PRELOAD, as the allocator articles compare them). Then
each stage's own rows (its own build of the driver, listed in
bench/stages.bzl), labelled "sized API, linked in": hc_malloc/hc_free_sized
called directly, which is less work than free() and shows what each layer
buys.
Every measurement is a fresh child process. Within a repetition all
allocators run one after another (interleaved), and the order rotates from one
repetition to the next, so a burst of load on this shared machine falls on a
different allocator each time; the median of the repetitions is reported.

Writes a table per workload to stdout, a progress line per step to stderr,
and results.csv, chart.svg (also churn.csv, results.md, machine.txt) into
bench-results/ at the workspace root, or --out. `--callgrind` counts
instructions instead (exact, repeatable) and writes callgrind.csv.
`--heapmap WORKLOAD` runs one workload once under stage 4's traced drop-in
and writes its heap maps and tier-traffic picture (docs/stage3.md).
"""

import argparse
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

# ---- What the bench knows ---------------------------------------------------------

WORKLOADS = {
    # name: (what a run does, the allocator articles it models: /work/shared/articles)
    "tight": ("N threads x (malloc 32 B, write 32 B, free)", "000, 001"),
    "hold": ("128 B blocks, 9 in 10 kept until the round ends, every 10th freed at once", "001"),
    "mixed": ("random 8 B..4 KiB, a live window of 1,000 per thread, random victims", "004"),
    "xthread": ("threads = producer/consumer pairs; producers malloc 64 B, consumers free", "002, 004"),
    "large": ("256 KiB..4 MiB, one byte written per 4 KiB page, then free", "001"),
    "churn": ("short-lived threads: each mallocs and frees 1,000 blocks of 16..256 B, exits", "004"),
    "bigblocks": ("20 live blocks of 5..25 MiB replaced at random, a byte written per page", "001"),
    "regrow": ("realloc from 64 B up to 16..48 MiB by ~2 KiB steps, then down; pair = realloc", "001"),
    "longspans": ("2.5..3.5 MiB malloc/free with 10,000 free holes of 1..2 MiB around", "001"),
    "manythreads": ("mixed's loop on fresh threads while --side-threads idle threads live, "
                    "each after 100 mallocs of 16 B..4 KiB", "issue 12"),
    "latethreads": ("mixed's loop on fresh threads after --side-threads threads made their first "
                    "100 mallocs in the last pthread-key destructor round", "issue 12"),
}

# The Debian packages of the peers, and the library each puts on the system.
PEERS = [
    ("tcmalloc", "libtcmalloc-minimal4", "libtcmalloc_minimal.so.4"),
    ("jemalloc", "libjemalloc2", "libjemalloc.so.2"),
    ("mimalloc", "libmimalloc2.0", "libmimalloc.so.2"),
]
LIB_DIRS = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib/x86_64-linux-gnu",
            "/usr/lib64", "/usr/lib"]

DEFAULT_THREADS = [1, 2, 4, 8]
MAX_THREADS = 16
DEFAULT_REPS = 5
QUICK_SCALE = 0.03
# A run stops at this many seconds (times --scale, but never below 0.15:
# the first touches of fresh memory need that long to amortise) even if its
# work is not done, and reports the pairs it did: see bench_driver.c.
MAX_SECONDS_AT_SCALE_1 = 2.0
MIN_TIME_LIMIT_SCALE = 0.15
# --callgrind: pairs in the measured loop (after a 1,000-pair warm-up).
DEFAULT_CALLGRIND_ITERS = 1_000_000

# ---- Errors -----------------------------------------------------------------------


class UsageError(Exception):
    """A bad option: one line on stderr, exit status 2."""


class BenchParser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def fail_usage(message):
    sys.stderr.write("bench: %s (try --help)\n" % message)
    sys.exit(2)


# ---- Finding the allocators --------------------------------------------------------


class Allocator:
    def __init__(self, name, driver, preload=None, package=None, sized=False):
        self.name = name          # as it appears in tables and CSVs
        self.driver = driver      # bench_driver build to run
        self.preload = preload    # LD_PRELOAD library, if any
        self.package = package    # Debian package (peers), for the machine line
        self.sized = sized        # a stage linked in, called as hc_malloc / hc_free_sized

    def env(self):
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        if self.preload:
            env["LD_PRELOAD"] = self.preload
        return env


def runfiles_root():
    """The directory the manifest's paths are relative to."""
    here = os.path.dirname(os.path.abspath(__file__))  # <runfiles>/<workspace>/bench
    candidates = [os.path.dirname(here)]
    if os.environ.get("RUNFILES_DIR"):
        candidates.append(os.path.join(os.environ["RUNFILES_DIR"], "hcmalloc"))
    for root in candidates:
        if os.path.exists(os.path.join(root, "bench", "allocators.tsv")):
            return root
    sys.stderr.write("bench: cannot find bench/allocators.tsv; run me with `bazel run //bench`\n")
    sys.exit(1)


def find_allocators():
    root = runfiles_root()
    plain = None
    built = []
    with open(os.path.join(root, "bench", "allocators.tsv")) as manifest:
        for line in manifest:
            if not line.strip():
                continue
            name, kind, path = line.rstrip("\n").split("\t")
            path = os.path.join(root, path)
            if kind == "driver" and name == "malloc":
                plain = path
            elif kind == "driver":
                built.append(Allocator(name, path, sized=True))
            elif kind == "preload":  # a stage's drop-in malloc library (stage 4)
                built.append(Allocator(name, None, preload=path))
    # The headline first: every allocator through malloc/free, the same call
    # path (glibc, the drop-in, the peers); then the stages' own rows.
    found = [Allocator("glibc", plain)]
    for a in built:
        if a.driver is None:
            a.driver = plain
            found.append(a)
    for name, package, lib in PEERS:
        for d in LIB_DIRS:
            path = os.path.join(d, lib)
            if os.path.exists(path):
                found.append(Allocator(name, plain, preload=path, package=package))
                break
    found.extend(a for a in built if a.sized)
    return found


# How the two groups of rows are labelled in tables, chart and markdown.
GROUP_TITLES = (
    "malloc/free, the same call path for every allocator (stage4_dropin is hcmalloc's drop-in)",
    "the stages, sized API (hc_malloc / hc_free_sized), linked in: what each layer buys",
)


def groups(allocators):
    """[(title, allocators)] for the headline and the stage rows, non-empty only."""
    parts = [(GROUP_TITLES[0], [a for a in allocators if not a.sized]),
             (GROUP_TITLES[1], [a for a in allocators if a.sized])]
    return [(title, members) for title, members in parts if members]


# ---- The machine line ---------------------------------------------------------------


def package_version(package):
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() if out.returncode == 0 else "?"
    except (OSError, subprocess.TimeoutExpired):
        return "?"


def machine_line(allocators):
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    glibc = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else "glibc ?"
    peers = ", ".join("%s %s" % (a.name, package_version(a.package)) for a in allocators if a.package)
    return "machine: %s, %d cores, Linux %s, %s%s; load average %.2f at start" % (
        cpu, os.cpu_count() or 0, platform.release(), glibc, ", " + peers if peers else "",
        os.getloadavg()[0])


# ---- Running one child ------------------------------------------------------------------


def run_child(argv, env, timeout_s):
    """Runs argv; returns (exit status, stdout, stderr)."""
    try:
        done = subprocess.run(argv, env=env, capture_output=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return -1, "", "timed out after %d s" % timeout_s
    return done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")


def parse_fields(text):
    fields = {}
    for word in text.split():
        if "=" in word:
            key, value = word.split("=", 1)
            fields[key] = value
    return fields


class Measurement:
    def __init__(self, ns_per_pair, rss_kib, mapped_kib, mapped_source, cut):
        self.ns_per_pair = ns_per_pair
        self.rss_kib = rss_kib
        self.mapped_kib = mapped_kib
        self.mapped_source = mapped_source
        self.cut = cut


class Skipped(Exception):
    """The allocator cannot run the workload (the driver says why)."""


def measure(alloc, workload, threads, scale):
    max_seconds = MAX_SECONDS_AT_SCALE_1 * max(scale, MIN_TIME_LIMIT_SCALE)
    argv = [alloc.driver, "run", workload, str(threads), repr(scale), repr(max_seconds)]
    status, out, err = run_child(argv, alloc.env(), timeout_s=60 + 10 * max_seconds)
    fields = parse_fields(out)
    if status == 0 and "skipped" in fields:
        raise Skipped(fields["skipped"].replace("_", " "))
    if status != 0 or "wall_ns" not in fields:
        detail = err.strip().splitlines()[-1] if err.strip() else "exit status %d" % status
        raise RuntimeError("%s %s t=%d failed: %s" % (alloc.name, workload, threads, detail))
    pairs = int(fields["pairs"])
    return Measurement(int(fields["wall_ns"]) / max(pairs, 1), int(fields["peak_rss_kib"]),
                       int(fields["end_mapped_kib"]), fields["mapped_source"], fields["cut"] == "1")


# ---- Formatting ---------------------------------------------------------------------------


def fmt_ns(ns):
    if ns >= 1e6:
        return "%.0f" % ns
    if ns >= 100:
        return "%.1f" % ns
    return "%.2f" % ns


def fmt_int(n):
    return "{:,}".format(n)


def print_table(workload, rows, allocators, threads):
    """rows: {(threads, allocator name): result dict}."""
    what, article = WORKLOADS[workload]
    churn = workload == "churn"
    print()
    print("== %s: %s (article %s)" % (workload, what, article))
    head = "%7s  %-20s %12s %9s %14s" % ("threads", "allocator", "ns/pair", "x glibc", "peak RSS KiB")
    if churn:
        head += " %16s" % "mapped KiB, end"
    print(head)
    any_cut = False
    for title, members in groups(allocators):
        print("  -- %s" % title)
        for t in threads:
            for a in members:
                r = rows.get((t, a.name))
                if r is None:
                    continue
                if r.get("failed"):
                    print("%7d  %-20s %12s" % (t, a.name, "skipped: " + r["skipped"] if r.get("skipped") else "FAILED"))
                    continue
                ratio = "%.2f" % r["ratio"] if r["ratio"] is not None else "-"
                mark = "*" if r["cut"] else " "
                any_cut = any_cut or r["cut"]
                line = "%7d  %-20s %11s%s %9s %14s" % (t, a.name, fmt_ns(r["ns"]), mark, ratio, fmt_int(r["rss"]))
                if churn:
                    line += " %12s (%s)" % (fmt_int(r["mapped"]), r["mapped_source"])
                print(line)
    if any_cut:
        print("  * stopped at the time limit before its work was done; ns/pair is over the pairs it did")
    if churn:
        print("  mapped: stages report hc_get_stats().os_mapped_bytes; glibc and the peers their RSS")
    sys.stdout.flush()


# ---- The chart -------------------------------------------------------------------------------

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


def write_chart(path, results, workloads, threads, allocators, machine):
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
                   % (left + 10 + 9 * len(wl), y0 + 30, esc(WORKLOADS[wl][0])))
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


# ---- Markdown, for docs/benchmarks.md -----------------------------------------------------------


def write_markdown(path, results, workloads, threads, allocators, machine):
    """The tables of a run, one per workload, ready to paste into the docs."""
    counts = " / ".join("%d" % t for t in threads)

    def per_thread_mib(rows, name, key):
        values = []
        for t in threads:
            r = rows.get((t, name), {"failed": True})
            values.append("-" if r.get("failed") else "%.1f" % (r[key] / 1024))
        return " / ".join(values)

    lines = ["<!-- written by `bazel run //bench` -->", "", machine, ""]
    for wl in workloads:
        rows = results[wl]
        what, article = WORKLOADS[wl]
        lines.append("**%s** (%s; article %s): ns per pair and ratio to glibc; peak RSS in MiB"
                     % (wl, what, article))
        lines.append("")
        head = "| allocator | %s | peak RSS, %s thr |" % (" | ".join("%d thr" % t for t in threads), counts)
        if wl == "churn":
            head += " mapped at end, MiB, %s thr |" % counts
        lines.append(head)
        lines.append("|---" * (head.count("|") - 1) + "|")
        for a in allocators:
            if a is allocators[0] or a.sized != allocators[allocators.index(a) - 1].sized:
                lines.append("| *%s* |%s" % (GROUP_TITLES[1 if a.sized else 0], " |" * (head.count("|") - 2)))
            cells = []
            for t in threads:
                r = rows.get((t, a.name), {"failed": True})
                if r.get("failed"):
                    cells.append("skipped" if r.get("skipped") else "failed")
                    continue
                ratio = "%.2fx" % r["ratio"] if r["ratio"] is not None else "-"
                cells.append("%s%s, %s" % (fmt_ns(r["ns"]), "\\*" if r["cut"] else "", ratio))
            line = "| %s | %s | %s |" % (a.name, " | ".join(cells), per_thread_mib(rows, a.name, "rss"))
            if wl == "churn":
                kind = "RSS"
                for t in threads:
                    r = rows.get((t, a.name), {"failed": True})
                    if not r.get("failed") and r["mapped_source"] == "stats":
                        kind = "stats"
                line += " %s (%s) |" % (per_thread_mib(rows, a.name, "mapped"), kind)
            lines.append(line)
        lines.append("")
    lines.append("\\* stopped at the time limit; ns/pair is over the pairs done. "
                 "Mapped at end: hc_get_stats().os_mapped_bytes (stats) or the resident set (RSS).")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


# ---- Timing workloads --------------------------------------------------------------------------


def bench_workloads(args, allocators, out_dir, machine):
    workloads, threads = args.workloads, args.threads
    steps = len(workloads) * len(threads) * args.reps * len(allocators)
    step = 0
    results = {}
    failed = False
    began = time.monotonic()
    for wl in workloads:
        rows = {}
        for t in threads:
            samples = {a.name: [] for a in allocators}
            errors, skipped = {}, {}
            for rep in range(args.reps):
                shift = rep % len(allocators)
                for a in allocators[shift:] + allocators[:shift]:
                    step += 1
                    if a.name in errors:
                        continue
                    try:
                        m = measure(a, wl, t, args.scale)
                    except Skipped as e:
                        errors[a.name] = str(e)
                        skipped[a.name] = str(e)
                        continue
                    except RuntimeError as e:
                        errors[a.name] = str(e)
                        sys.stderr.write("[%d/%d] %s\n" % (step, steps, e))
                        continue
                    samples[a.name].append(m)
                    sys.stderr.write("[%d/%d] %s threads=%d rep %d/%d %-18s %s ns/pair%s\n" % (
                        step, steps, wl, t, rep + 1, args.reps, a.name, fmt_ns(m.ns_per_pair),
                        " (cut)" if m.cut else ""))
                    sys.stderr.flush()
            for a in allocators:
                ms = samples[a.name]
                if a.name in skipped:
                    rows[(t, a.name)] = {"failed": True, "skipped": skipped[a.name]}
                    continue
                if a.name in errors or not ms:
                    rows[(t, a.name)] = {"failed": True}
                    failed = True
                    continue
                rows[(t, a.name)] = {
                    "ns": statistics.median(m.ns_per_pair for m in ms),
                    "rss": int(statistics.median(m.rss_kib for m in ms)),
                    "mapped": int(statistics.median(m.mapped_kib for m in ms)),
                    "mapped_source": ms[0].mapped_source,
                    "cut": any(m.cut for m in ms),
                    "reps": len(ms),
                }
            base = rows.get((t, "glibc"))
            for a in allocators:
                r = rows[(t, a.name)]
                if not r.get("failed"):
                    ok = base is not None and not base.get("failed") and base["ns"] > 0
                    r["ratio"] = r["ns"] / base["ns"] if ok else None
        results[wl] = rows
        print_table(wl, rows, allocators, threads)

    with open(os.path.join(out_dir, "results.csv"), "w") as f:
        f.write("workload,allocator,threads,ns_per_pair,ratio_to_glibc,peak_rss_kib,reps\n")
        for wl in workloads:
            for t in threads:
                for a in allocators:
                    r = results[wl][(t, a.name)]
                    if r.get("failed"):
                        continue
                    ratio = "%.4f" % r["ratio"] if r["ratio"] is not None else ""
                    f.write("%s,%s,%d,%.3f,%s,%d,%d\n" % (wl, a.name, t, r["ns"], ratio, r["rss"], r["reps"]))
    if "churn" in workloads:
        with open(os.path.join(out_dir, "churn.csv"), "w") as f:
            f.write("allocator,threads,end_mapped_kib,measured_as\n")
            for t in threads:
                for a in allocators:
                    r = results["churn"][(t, a.name)]
                    if not r.get("failed"):
                        f.write("%s,%d,%d,%s\n" % (a.name, t, r["mapped"],
                                                   "os_mapped_bytes" if r["mapped_source"] == "stats" else "rss"))
    # Other work on the machine inflates wall times: say how busy it was.
    machine += ", %.2f at end" % os.getloadavg()[0]
    print()
    print(machine)
    with open(os.path.join(out_dir, "machine.txt"), "w") as f:
        f.write(machine + "\n")
    write_chart(os.path.join(out_dir, "chart.svg"), results, workloads, threads, allocators, machine)
    write_markdown(os.path.join(out_dir, "results.md"), results, workloads, threads, allocators, machine)
    sys.stderr.write("bench: %d runs in %.0f s; wrote results.csv, chart.svg, results.md to %s\n"
                     % (step, time.monotonic() - began, out_dir))
    return 1 if failed else 0


# ---- Counting instructions -------------------------------------------------------------------------


def callgrind_cost(out_file, function):
    """Inclusive cost (Ir) of every call `function` makes, from a callgrind
    output written with --compress-strings=no --compress-pos=no."""
    total = 0
    current = None
    in_call = False
    with open(out_file) as f:
        for line in f:
            if line.startswith("fn="):
                current = line[3:].strip()
                in_call = False
            elif line.startswith("calls="):
                in_call = True
            elif in_call:
                # The line after calls= is the call's inclusive cost: "position Ir".
                if current == function or current.startswith(function + "'"):
                    total += int(line.split()[1])
                in_call = False
    return total


def bench_callgrind(args, allocators, out_dir):
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        sys.stderr.write("bench: --callgrind needs valgrind: run tools/setup.sh\n")
        return 1
    iters = args.callgrind_iters
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for a in allocators:
            row = [a.name]
            for keep in (0, 1):
                out_file = os.path.join(tmp, "%s.%d.out" % (a.name, keep))
                argv = [valgrind, "--tool=callgrind", "--callgrind-out-file=" + out_file,
                        "--compress-strings=no", "--compress-pos=no",
                        a.driver, "callgrind", str(iters), str(keep)]
                status, _, err = run_child(argv, a.env(), timeout_s=3600)
                if status != 0:
                    sys.stderr.write("bench: callgrind of %s failed:\n%s" % (a.name, err))
                    return 1
                per_pair = callgrind_cost(out_file, "bench_cg_loop") / iters
                row.append(per_pair)
                sys.stderr.write("callgrind %-20s %s: %.3f instructions per pair\n"
                                 % (a.name, "warm (one block kept live)" if keep else "plain", per_pair))
            rows.append(row)

    def fmt(v):
        # One decimal: jemalloc's periodic housekeeping makes its figure a
        # fraction whose second decimal moves with the loop length (67.28 at
        # 1M pairs, 67.27 at 10M); the first does not.
        return "%d" % v if v == int(v) else "%.1f" % v

    print()
    print("== callgrind: instructions in malloc(32) + free per pair, loop excluded (%s pairs)" % fmt_int(iters))
    print("%-20s %16s %16s" % ("allocator", "instr/pair", "warm instr/pair"))
    for name, plain, warm in rows:
        print("%-20s %16s %16s" % (name, fmt(plain), fmt(warm)))
    print("  warm: one more 32 B block stays live throughout the loop")
    with open(os.path.join(out_dir, "callgrind.csv"), "w") as f:
        f.write("allocator,instr_per_pair,instr_per_pair_warm\n")
        for name, plain, warm in rows:
            f.write("%s,%s,%s\n" % (name, fmt(plain), fmt(warm)))
    sys.stderr.write("bench: wrote callgrind.csv to %s\n" % out_dir)
    return 0


# ---- --heapmap: pictures of one run ------------------------------------------------------------


def bench_heapmap(args, out_dir):
    """Runs args.heapmap once with the plain driver under the traced drop-in;
    writes heapmap-W-peak.svg, heapmap-W-end.svg, trace-W.txt, traffic-W.svg."""
    import trace_svg  # bench/trace_svg.py, beside this file
    root = runfiles_root()
    driver = os.path.join(root, "bench", "driver_malloc")
    preload = os.path.join(root, "bench", "preload_trace")
    w = args.heapmap
    threads = args.threads[0] if len(args.threads) == 1 else 2
    trace_file = os.path.join(out_dir, "trace-%s.txt" % w)
    env = dict(os.environ, LD_PRELOAD=preload, HCMALLOC_TRACE=trace_file,
               BENCH_HEAPMAP=os.path.join(out_dir, "heapmap-" + w))
    max_seconds = MAX_SECONDS_AT_SCALE_1 * max(args.scale, MIN_TIME_LIMIT_SCALE)
    argv = [driver, "run", w, str(threads), repr(args.scale), repr(max_seconds)]
    status, out, err = run_child(argv, env, timeout_s=120 + 10 * max_seconds)
    if status != 0:
        sys.stderr.write("bench: --heapmap %s failed: %s\n" % (w, err.strip() or "exit status %d" % status))
        return 1
    with open(trace_file) as f:
        picture = trace_svg.draw(trace_svg.parse(f.read()),
                                 "hcmalloc tier traffic: %s, %d thread%s (stage 4, traced drop-in)"
                                 % (w, threads, "" if threads == 1 else "s"))
    with open(os.path.join(out_dir, "traffic-%s.svg" % w), "w") as f:
        f.write(picture)
    print("heapmap %s, %d threads, scale %g: %s" % (w, threads, args.scale, out.strip()))
    for name in ("heapmap-%s-peak.svg" % w, "heapmap-%s-end.svg" % w, "trace-%s.txt" % w, "traffic-%s.svg" % w):
        print("  wrote %s" % os.path.join(out_dir, name))
    return 0


# ---- Options -------------------------------------------------------------------------------------------


def parse_list(text, what):
    items = [x.strip() for x in text.split(",") if x.strip()]
    if not items:
        raise UsageError("%s: empty list" % what)
    return items


def parse_args(argv, allocators):
    names = [a.name for a in allocators]
    p = BenchParser(
        prog="bazel run //bench --",
        description="Compares every hcmalloc stage with glibc malloc and the peers found "
                    "(tcmalloc, jemalloc, mimalloc by LD_PRELOAD). Tables go to stdout, "
                    "progress to stderr, results.csv and chart.svg to the output folder.",
        epilog="allocators found here: %s. Workloads: %s." % (", ".join(names), ", ".join(WORKLOADS)))
    p.add_argument("--workloads", metavar="LIST", default=",".join(WORKLOADS),
                   help="comma-separated workloads (default: all)")
    p.add_argument("--allocators", metavar="LIST", default=",".join(names),
                   help="comma-separated allocators (default: every one found)")
    p.add_argument("--threads", metavar="LIST", default=",".join(map(str, DEFAULT_THREADS)),
                   help="thread counts, 1..%d (default: 1,2,4,8)" % MAX_THREADS)
    p.add_argument("--reps", metavar="N", type=int, default=None,
                   help="repetitions; the median is reported (default: %d)" % DEFAULT_REPS)
    p.add_argument("--scale", metavar="X", type=float, default=None,
                   help="multiplies every workload's size and time limit (default: 1)")
    p.add_argument("--quick", action="store_true",
                   help="one repetition, small sizes (scale %g): a smoke run under a minute" % QUICK_SCALE)
    p.add_argument("--callgrind", action="store_true",
                   help="instead of timing: instructions per malloc(32)+free pair under valgrind "
                        "--tool=callgrind, for every allocator; writes callgrind.csv")
    p.add_argument("--callgrind-iters", metavar="N", type=int, default=DEFAULT_CALLGRIND_ITERS,
                   help="pairs in the measured callgrind loop (default: %s)" % fmt_int(DEFAULT_CALLGRIND_ITERS))
    p.add_argument("--side-threads", metavar="N", type=int, default=300,
                   help="manythreads, latethreads: the other threads, 1..4000 (default: 300)")
    p.add_argument("--heapmap", metavar="WORKLOAD", default=None,
                   help="instead: run WORKLOAD once under stage 4's traced drop-in and write its heap "
                        "maps (at the peak and the end) and tier-traffic picture")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="output folder (default: bench-results/ at the workspace root)")
    args = p.parse_args(argv)

    args.workloads = parse_list(args.workloads, "--workloads")
    for w in args.workloads:
        if w not in WORKLOADS:
            raise UsageError("--workloads: unknown workload '%s' (known: %s)" % (w, ", ".join(WORKLOADS)))
    wanted = parse_list(args.allocators, "--allocators")
    for w in wanted:
        if w not in names:
            known = [p[0] for p in PEERS]
            why = " (its library is not installed: run tools/setup.sh)" if w in known else ""
            raise UsageError("--allocators: no allocator '%s'%s; found: %s" % (w, why, ", ".join(names)))
    args.allocators = [a for a in allocators if a.name in wanted]
    try:
        args.threads = sorted(set(int(t) for t in parse_list(args.threads, "--threads")))
    except ValueError:
        raise UsageError("--threads: '%s' is not a list of numbers" % args.threads)
    if any(t < 1 or t > MAX_THREADS for t in args.threads):
        raise UsageError("--threads: each count must be 1..%d" % MAX_THREADS)
    if args.reps is None:
        args.reps = 1 if args.quick else DEFAULT_REPS
    if args.reps < 1:
        raise UsageError("--reps: must be at least 1")
    if args.scale is None:
        args.scale = QUICK_SCALE if args.quick else 1.0
    if not args.scale > 0 or math.isinf(args.scale):
        raise UsageError("--scale: must be a positive number")
    if not 1 <= args.side_threads <= 4000:
        raise UsageError("--side-threads: must be 1..4000")
    os.environ["BENCH_SIDE_THREADS"] = str(args.side_threads)  # read by bench_driver
    if args.callgrind_iters < 1:
        raise UsageError("--callgrind-iters: must be at least 1")
    if args.heapmap is not None and args.heapmap not in WORKLOADS:
        raise UsageError("--heapmap: unknown workload '%s' (known: %s)" % (args.heapmap, ", ".join(WORKLOADS)))
    return args


def output_dir(requested):
    if requested is None:
        base = os.environ.get("BUILD_WORKSPACE_DIRECTORY") or os.getcwd()
        return os.path.join(base, "bench-results")
    # Relative to where the user typed the command, not Bazel's runfiles.
    return os.path.join(os.environ.get("BUILD_WORKING_DIRECTORY") or os.getcwd(), requested)


def main(argv):
    allocators = find_allocators()
    try:
        args = parse_args(argv, allocators)
    except UsageError as e:
        fail_usage(str(e))
    out_dir = output_dir(args.out)
    os.makedirs(out_dir, exist_ok=True)
    allocators = args.allocators

    # A preload that did not take (a missing or broken library) would silently
    # measure glibc under the peer's name: check what malloc resolves to.
    for a in allocators:
        status, out, err = run_child([a.driver, "name"], a.env(), timeout_s=30)
        name = out.strip()
        expected = os.path.basename(a.preload) if a.preload else None
        if status != 0 or (expected and os.path.basename(name) != expected):
            sys.stderr.write("bench: %s does not load (malloc is %s) %s\n" % (a.name, name or "?", err.strip()))
            return 1

    machine = machine_line(allocators)
    with open(os.path.join(out_dir, "machine.txt"), "w") as f:
        f.write(machine + "\n")
    print(machine)
    sys.stderr.write("bench: allocators: %s\n" % " ".join(a.name for a in allocators))
    if args.callgrind:
        return bench_callgrind(args, allocators, out_dir)
    if args.heapmap:
        return bench_heapmap(args, out_dir)
    sys.stderr.write("bench: workloads %s, threads %s, %d rep%s, scale %g\n" % (
        ",".join(args.workloads), ",".join(map(str, args.threads)), args.reps,
        "" if args.reps == 1 else "s", args.scale))
    return bench_workloads(args, allocators, out_dir, machine)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
