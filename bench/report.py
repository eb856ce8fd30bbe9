"""bench/report.py — the bench's results as text: the tables on stdout,
results.csv and churn.csv, and results.md (the tables for docs/benchmarks.md).

Every function takes the results as bench.py's timing mode makes them:
results[workload][(threads, allocator name)] is a dict, either a measurement
(ns, ratio, rss, mapped, mapped_source, cut, reps) or a row that has none:
{"failed": True, "skipped": why} (this allocator cannot run the workload)
or {"failed": True, "reason": why, "reps": runs that worked} (a run failed).
chart.py draws the same results.
"""

import csv
import sys

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



# ---- Numbers -------------------------------------------------------------------------------


def fmt_ns(ns):
    if ns >= 1e6:
        return "%.0f" % ns
    if ns >= 100:
        return "%.1f" % ns
    return "%.2f" % ns


def fmt_int(n):
    return "{:,}".format(n)


# ---- The tables on stdout ---------------------------------------------------------------------


def print_table(workload, info, rows, allocators, threads):
    """rows: {(threads, allocator name): result dict}; info: (what, article)."""
    what, article = info
    churn = workload == "churn"
    print()
    print("== %s: %s (%s)" % (workload, what, source(article)))
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
                    print("%7d  %-20s %12s" % (t, a.name, "skipped: " + r["skipped"] if r.get("skipped")
                                                 else "FAILED: " + r["reason"]))
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



# ---- CSV -----------------------------------------------------------------------------------------

RESULTS_HEADER = ["workload", "allocator", "threads", "ns_per_pair", "ratio_to_glibc", "peak_rss_kib",
                  "reps", "failure"]


def write_results_csv(path, results, workloads, threads, allocators):
    """One row per workload, allocator and thread count that ran; a failed
    one has its reason in `failure` and no figures (reps: the runs that
    worked before it). Allocators that cannot run a workload have no row."""
    with open(path, "w", newline="") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(RESULTS_HEADER)
        for wl in workloads:
            for t in threads:
                for a in allocators:
                    r = results[wl][(t, a.name)]
                    if r.get("skipped"):
                        continue
                    if r.get("failed"):
                        out.writerow([wl, a.name, t, "", "", "", r["reps"], r["reason"]])
                        continue
                    ratio = "%.4f" % r["ratio"] if r["ratio"] is not None else ""
                    out.writerow([wl, a.name, t, "%.3f" % r["ns"], ratio, r["rss"], r["reps"], ""])


def write_churn_csv(path, churn_rows, threads, allocators):
    """Mapped memory after the churn workload, per allocator and thread count."""
    with open(path, "w") as f:
        f.write("allocator,threads,end_mapped_kib,measured_as\n")
        for t in threads:
            for a in allocators:
                r = churn_rows[(t, a.name)]
                if not r.get("failed"):
                    f.write("%s,%d,%d,%s\n" % (a.name, t, r["mapped"],
                                               "os_mapped_bytes" if r["mapped_source"] == "stats" else "rss"))


# ---- Markdown, for docs/benchmarks.md -----------------------------------------------------------


def source(article):
    """What a workload models: allocator articles by number (docs/README.md's
    Sources), or the program it stands for."""
    return "article " + article if article[:1].isdigit() else "after " + article


def write_markdown(path, results, workloads, info, threads, allocators, machine):
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
        what, article = info[wl]
        lines.append("**%s** (%s; %s): ns per pair and ratio to glibc; peak RSS in MiB"
                     % (wl, what, source(article)))
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
                    cells.append("skipped" if r.get("skipped") else "failed: " + r["reason"])
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

