#!/bin/bash
# tools/measure/threads_vs_processes.sh [--before LIB] [--rounds N] [--scales LIST]
# — does the bench's `hold` scale from one thread to two? The same pairs
# three ways, for each allocator: two threads of one process (`run hold 2
# S`), two processes of one thread at once, each doing half (`run hold 1
# S/2`: nothing shared but the machine), and one process doing half alone.
# Two threads that share nothing the program can see should take about as
# long as the two processes; when they take longer, the allocator shares
# something (a lock, a counter's line, neighbouring pages), which
# docs/benchmarks.md, section 21, went looking for.
#
# Allocators: stage 1's and stage 3's bench drivers (the sized API, linked
# in: stage 1 never gives an object back, so its threads share nothing),
# the drop-in of this tree and mimalloc (if installed) through
# driver_malloc, and --before LIB, another build of the drop-in.
#   --before LIB   a libhcmalloc.so to compare (e.g. built at an older commit)
#   --rounds N     rounds, interleaved (default 3); every run is printed
#   --scales LIST  comma-separated `hold` scales (default 5,20: 10 and 40
#                  million pairs)
# Prints one line per run: allocator, scale, the threads' time, the two
# processes' times and the lone process's time, in ms.
set -euo pipefail
cd "$(dirname "$0")/../.."
before=""
rounds=3
scales="5,20"
usage() {
    echo "usage: tools/measure/threads_vs_processes.sh [--before LIB] [--rounds N] [--scales LIST]" >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case "$1" in
        --before) [ $# -ge 2 ] || usage; before="$2"; shift 2 ;;
        --rounds) [ $# -ge 2 ] || usage; rounds="$2"; shift 2 ;;
        --scales) [ $# -ge 2 ] || usage; scales="$2"; shift 2 ;;
        *) usage ;;
    esac
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "threads_vs_processes: --rounds must be a positive number" >&2; exit 2; }
[[ $scales =~ ^[0-9]+(\.[0-9]+)?(,[0-9]+(\.[0-9]+)?)*$ ]] ||
    { echo "threads_vs_processes: --scales must be numbers separated by commas" >&2; exit 2; }
[ -z "$before" ] || [ -f "$before" ] || { echo "threads_vs_processes: no such library: $before" >&2; exit 2; }

bazel build --config=opt //stage4_reclaim:libhcmalloc.so //bench:driver_malloc \
    //bench:driver_stage1_threadcache //bench:driver_stage3_pagecache >&2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for f in stage4_reclaim/libhcmalloc.so bench/driver_malloc bench/driver_stage1_threadcache \
    bench/driver_stage3_pagecache; do
    cp -L "bazel-bin/$f" "$scratch/"
done

# NAME|LD_PRELOAD|DRIVER
runs=("stage1|-|driver_stage1_threadcache" "stage3|-|driver_stage3_pagecache"
      "dropin|$scratch/libhcmalloc.so|driver_malloc")
[ -n "$before" ] && runs+=("before|$(realpath "$before")|driver_malloc")
mimalloc=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2
[ -f "$mimalloc" ] && runs+=("mimalloc|$mimalloc|driver_malloc")

ms() { sed -n 's/.*wall_ns=\([0-9]*\).*/\1/p' "$1" | awk '{ printf "%d", $1 / 1e6 }'; }
hold() { # PRELOAD DRIVER THREADS SCALE OUT
    if [ "$1" = - ]; then "$scratch/$2" run hold "$3" "$4" 60 >"$5"
    else LD_PRELOAD="$1" "$scratch/$2" run hold "$3" "$4" 60 >"$5"; fi
}

for round in $(seq "$rounds"); do
    for scale in ${scales//,/ }; do
        half=$(awk -v s="$scale" 'BEGIN { print s / 2 }')
        for run in "${runs[@]}"; do
            IFS='|' read -r name preload driver <<<"$run"
            hold "$preload" "$driver" 2 "$scale" "$scratch/threads"
            hold "$preload" "$driver" 1 "$half" "$scratch/p1" & first=$!
            hold "$preload" "$driver" 1 "$half" "$scratch/p2"
            wait "$first"
            hold "$preload" "$driver" 1 "$half" "$scratch/alone"
            echo "round $round $name scale $scale: threads $(ms "$scratch/threads") ms," \
                "two processes $(ms "$scratch/p1") / $(ms "$scratch/p2") ms, one alone $(ms "$scratch/alone") ms"
        done
    done
done
