#!/bin/bash
# bench/heapmap_test.sh — what `bench --heapmap` makes, checked: one short
# xthread run of the plain driver under stage 4's traced drop-in must write
# heap maps and a trace; every picture must parse with python3's
# xml.etree; every malloc(64) of the run must be in the trace as a
# thread-cache hit or a refill (less what threads had not flushed: under
# 1,024 each).
# usage (Bazel passes these): heapmap_test.sh DRIVER PRELOAD TRACE_SVG_PY
set -euo pipefail
driver=$1 preload=$2 tool=$3
out=${TEST_TMPDIR:-$(mktemp -d)}
threads=2

result=$(LD_PRELOAD=$preload HCMALLOC_TRACE=$out/trace.txt BENCH_HEAPMAP=$out/heapmap \
    "$driver" run xthread $threads 0.02 20)
echo "$result"
python3 "$tool" "$out/trace.txt" -o "$out/traffic.svg" --title "heapmap_test"

python3 - "$out" "$result" $threads <<'PY'
import sys
import xml.etree.ElementTree as ET

out, result, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
SVG = "{http://www.w3.org/2000/svg}"
failed = []

def check(ok, what):
    if not ok:
        failed.append(what)

for name in ("heapmap-peak.svg", "heapmap-end.svg", "traffic.svg"):
    root = ET.parse("%s/%s" % (out, name)).getroot()  # raises if malformed
    check(root.tag == SVG + "svg", "%s: root is %s" % (name, root.tag))
    if name.startswith("heapmap"):
        totals = {e.get("data-total") for e in root.iter() if e.get("data-total")}
        check(len(totals) == 7, "%s: totals %s" % (name, sorted(totals)))
        check(any(e.get("data-kind") == "small" for e in root.iter()), name + ": no small span drawn")

pairs = int(dict(w.split("=", 1) for w in result.split())["pairs"])
counts = {}
events = []
for line in open(out + "/trace.txt"):
    f = line.split()
    if f[0] == "event":
        events.append(f[1])
    elif f[0] == "total":
        counts[(events[int(f[1])], int(f[2]))] = int(f[3])
cls64 = 5  # the class of 64 B (common/size_class.h's table)
mallocs = counts.get(("tc_alloc_hit", cls64), 0) + counts.get(("tc_refill", cls64), 0)
frees = counts.get(("tc_free_hit", cls64), 0) + counts.get(("tc_overflow", cls64), 0)
check(pairs - 1024 * threads <= mallocs <= pairs + 100, "mallocs of 64 B in the trace: %d, run: %d" % (mallocs, pairs))
check(pairs - 1024 * threads <= frees <= pairs + 100, "frees of 64 B in the trace: %d, run: %d" % (frees, pairs))
check(counts.get(("span_carve", cls64), 0) >= 1, "no span carved for 64 B")
if failed:
    print("FAILED:\n  " + "\n  ".join(failed))
    sys.exit(1)
print("heapmap_test: 3 pictures parse; trace has %d of %d mallocs, %d frees" % (mallocs, pairs, frees))
PY
