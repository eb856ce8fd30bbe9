#!/bin/bash
# tools/measure/paired_runs.sh BEFORE_LIB WORKLOAD THREADS SCALE [--pairs N] [--pin CPU] [--after LIB]
# — is one build of the drop-in faster than another on one bench workload,
# on a machine whose speed drifts? Runs `driver_malloc run WORKLOAD THREADS
# SCALE` under the two libraries (LD_PRELOAD) one right after the other,
# N times, the order swapped every pair, and compares each pair's two
# times: a drift in the machine's load moves both runs of a pair alike,
# where it would move the medians of two separate series apart. Prints
# every pair, then each build's median time and peak RSS, the median and
# quartiles of the pairs' ratios after / before, and how many pairs the
# after build won (docs/benchmarks.md, section 25, is a table of these).
#
#   BEFORE_LIB    a libhcmalloc.so (or any malloc library) to compare against
#   --after LIB   the other library (default: this tree's drop-in, built
#                 here with --config=opt)
#   --pairs N     pairs of runs (default 11)
#   --pin CPU     both runs on that CPU alone (taskset -c CPU): a one-thread
#                 run then never moves between cores
set -euo pipefail
cd "$(dirname "$0")/../.."

usage() {
    echo "usage: tools/measure/paired_runs.sh BEFORE_LIB WORKLOAD THREADS SCALE" \
        "[--pairs N] [--pin CPU] [--after LIB]" >&2
    exit 2
}
positional=()
pairs=11
pin=""
after=""
while [ $# -gt 0 ]; do
    case "$1" in
        --pairs) [ $# -ge 2 ] || usage; pairs="$2"; shift 2 ;;
        --pin) [ $# -ge 2 ] || usage; pin="$2"; shift 2 ;;
        --after) [ $# -ge 2 ] || usage; after="$2"; shift 2 ;;
        -*) usage ;;
        *) positional+=("$1"); shift ;;
    esac
done
[ ${#positional[@]} -eq 4 ] || usage
before=${positional[0]} workload=${positional[1]} threads=${positional[2]} scale=${positional[3]}
[[ $pairs =~ ^[1-9][0-9]*$ ]] || { echo "paired_runs: --pairs must be a positive number" >&2; exit 2; }
[ -z "$pin" ] || [[ $pin =~ ^[0-9]+$ ]] || { echo "paired_runs: --pin must be a CPU number" >&2; exit 2; }
[[ $threads =~ ^[1-9][0-9]*$ ]] || { echo "paired_runs: THREADS must be a positive number" >&2; exit 2; }
[[ $scale =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "paired_runs: SCALE must be a number" >&2; exit 2; }
[ -f "$before" ] || { echo "paired_runs: no such library: $before" >&2; exit 2; }
[ -z "$after" ] || [ -f "$after" ] || { echo "paired_runs: no such library: $after" >&2; exit 2; }

targets=(//bench:driver_malloc)
[ -n "$after" ] || targets+=(//stage4_reclaim:libhcmalloc.so)
bazel build --config=opt "${targets[@]}" >&2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cp -L bazel-bin/bench/driver_malloc "$scratch/"
bazel-bin/bench/driver_malloc list | cut -f1 | grep -qx -- "$workload" ||
    { echo "paired_runs: no such workload: $workload (driver_malloc list)" >&2; exit 2; }
if [ -z "$after" ]; then
    cp -L bazel-bin/stage4_reclaim/libhcmalloc.so "$scratch/after.so"
    after=$scratch/after.so
fi
before=$(realpath "$before")
after=$(realpath "$after")
runner=()
[ -z "$pin" ] || runner=(taskset -c "$pin")

run() { # LIB: one run; prints "WALL_NS PEAK_RSS_KIB"
    local out
    out=$(LD_PRELOAD=$1 "${runner[@]}" "$scratch/driver_malloc" run "$workload" "$threads" "$scale" 600)
    sed -n 's/.*wall_ns=\([0-9]*\).*peak_rss_kib=\([0-9]*\).*/\1 \2/p' <<<"$out"
}

echo "pair  before_ms  after_ms  after/before  (${workload} ${threads} ${scale}${pin:+, pinned to CPU $pin})"
: >"$scratch/pairs"
for ((i = 1; i <= pairs; i++)); do
    if ((i % 2)); then
        b=$(run "$before"); a=$(run "$after")
    else
        a=$(run "$after"); b=$(run "$before")
    fi
    [ -n "$b" ] && [ -n "$a" ] || { echo "paired_runs: a run printed no time (see driver_malloc's output)" >&2; exit 1; }
    echo "$b $a" >>"$scratch/pairs"
    awk -v i="$i" '{ printf "%4d  %9.1f  %8.1f  %12.3f\n", i, $1 / 1e6, $3 / 1e6, $3 / $1 }' <<<"$b $a"
done
python3 - "$scratch/pairs" <<'PY'
import statistics
import sys

rows = [list(map(int, line.split())) for line in open(sys.argv[1])]
before = [r[0] for r in rows]
after = [r[2] for r in rows]
ratios = sorted(a / b for b, a in zip(before, after))
quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
print("before: median %.1f ms, peak RSS %.1f MiB" % (statistics.median(before) / 1e6,
                                                    statistics.median(r[1] for r in rows) / 1024))
print("after:  median %.1f ms, peak RSS %.1f MiB" % (statistics.median(after) / 1e6,
                                                    statistics.median(r[3] for r in rows) / 1024))
print("after / before: median %.2f (quartiles %.2f-%.2f); after faster in %d of %d pairs"
      % (quartiles[1], quartiles[0], quartiles[2], sum(1 for r in ratios if r < 1), len(ratios)))
PY
