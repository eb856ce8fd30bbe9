#!/usr/bin/env python3
"""bench/publish.py — puts a recorded bench run into the docs.

usage: python3 bench/publish.py [RESULTS_DIR]   (bench-results/ by default)

After `bazel run //bench` (or any run that wrote RESULTS_DIR), rewrites
docs/benchmarks.md's section between BEGIN and END below with that run:
the command (RESULTS_DIR/command.txt), when (results.csv's time, UTC), the
tree it measured (tree.txt: its commit), the machine and its load
(machine.txt) and the tables (results.md), and copies
the run's chart.svg to docs/benchmarks-chart.svg, the chapter's headline
picture. Nothing else in the chapter quotes the run's numbers, so this one
command brings it up to date. Run it from the repository's root.
"""

import datetime
import os
import shutil
import sys

sys.dont_write_bytecode = True

BEGIN = "<!-- BEGIN RESULTS: written by bench/publish.py from bench-results/; edit the script, not this -->"
END = "<!-- END RESULTS -->"
DOC = os.path.join("docs", "benchmarks.md")
CHART = os.path.join("docs", "benchmarks-chart.svg")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def section(results_dir):
    command = read(os.path.join(results_dir, "command.txt")).strip()
    machine = read(os.path.join(results_dir, "machine.txt")).strip()
    when = datetime.datetime.fromtimestamp(os.path.getmtime(os.path.join(results_dir, "results.csv")),
                                           datetime.timezone.utc)
    # The tree the run measured (bench.py writes it; older runs have none).
    tree_file = os.path.join(results_dir, "tree.txt")
    tree = ", tree %s," % read(tree_file).strip() if os.path.exists(tree_file) else ""
    tables = [line for line in read(os.path.join(results_dir, "results.md")).split("\n")
              if not line.startswith("<!--") and line.strip() != machine]
    while tables and not tables[0].strip():
        tables.pop(0)
    lines = [
        BEGIN,
        "Recorded %s UTC%s with" % (when.strftime("%d %b %Y %H:%M"), tree),
        "",
        "```sh",
        command,
        "python3 bench/publish.py    # this section and the chart, from bench-results/",
        "```",
        "",
        machine.replace("machine: ", "on: ", 1) + ".",
        "",
        "![time per pair as a ratio to glibc, per workload, log scale](benchmarks-chart.svg)",
        "",
    ] + tables
    while lines[-1].strip() == "":
        lines.pop()
    return "\n".join(lines + [END])


def main(argv):
    if len(argv) > 1 or (argv and argv[0].startswith("-")):
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    results_dir = argv[0] if argv else "bench-results"
    doc = read(DOC)
    if BEGIN not in doc or END not in doc:
        sys.stderr.write("publish: %s has no results section (%s ... %s)\n" % (DOC, BEGIN, END))
        return 1
    head, rest = doc.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    try:
        # Read everything before the chapter is opened for writing: a
        # missing file must leave it as it was, not empty.
        text = head + section(results_dir) + tail
    except OSError as e:
        sys.stderr.write("publish: %s is not a recorded run (%s)\n" % (results_dir, e))
        return 1
    with open(DOC, "w", encoding="utf-8") as f:
        f.write(text)
    shutil.copyfile(os.path.join(results_dir, "chart.svg"), CHART)
    sys.stderr.write("publish: %s and %s from %s\n" % (DOC, CHART, results_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
