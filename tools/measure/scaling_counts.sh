#!/bin/bash
# tools/measure/scaling_counts.sh [--before REV] [--threads LIST] [--workloads LIST] [--scale X]
# — the scaling counts of docs/benchmarks.md: for each bench workload and
# thread count, per 1,000 operations (mallocs and frees), the shared locks
# the drop-in took (a central bucket's or the page cache's), how many of
# them it found held by another thread, and how many frees were of a block
# another thread allocated. Counts, not times: they do not depend on the
# machine's load, and a 2-core machine can count 64 threads (oversubscribed)
# as faithfully as a 64-core one, where every acquisition of a shared lock
# is a cache-line transfer and every wait a stall.
#
# The locks come from the traced drop-in (//stage4_reclaim:libhcmalloc_trace.so,
# common/trace.h's lock_taken / lock_waited, written at exit to
# $HCMALLOC_TRACE); the operations and cross-thread frees from the bench
# driver built with the counting shim (//bench:driver_count, bench/shim_count.c).
#
#   --before REV     also count the tree at git revision REV (its central
#                    and page caches, with this tree's trace counters
#                    patched in: the lock sites are the same calls), and
#                    print both, REV first
#   --threads LIST   comma-separated thread counts (default 1,2,4,8,16,64)
#   --workloads LIST comma-separated (default: the tour's six and handoff)
#   --scale X        each workload's size (default 0.1: a few seconds a row
#                    at 64 threads)
# Prints a markdown table on stdout; progress on stderr.
set -euo pipefail
cd "$(dirname "$0")/../.."
before=""
threads="1,2,4,8,16,64"
workloads="tight,hold,mixed,xthread,large,churn,handoff"
scale="0.1"
while [ $# -gt 0 ]; do
    case "$1" in
        --before) before="$2"; shift 2 ;;
        --threads) threads="$2"; shift 2 ;;
        --workloads) workloads="$2"; shift 2 ;;
        --scale) scale="$2"; shift 2 ;;
        *) echo "usage: tools/measure/scaling_counts.sh [--before REV] [--threads LIST] [--workloads LIST] [--scale X]" >&2
           exit 2 ;;
    esac
done
cache=()
[ -n "${HC_BAZEL_DISK_CACHE:-}" ] && cache=(--disk_cache="$HC_BAZEL_DISK_CACHE") # as tools/test.sh takes it
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

bazel build "${cache[@]}" //bench:driver_count //bench:preload_trace >&2
cp -L bazel-bin/bench/driver_count "$scratch/driver_count"
cp -L bazel-bin/bench/preload_trace "$scratch/after.so"
libs="after"

if [ -n "$before" ]; then
    # REV's tree, with the lock counters of this one: trace.h / trace.c from
    # here, and the same macro at REV's bucket and page-cache lock sites.
    tree="$scratch/before-tree"
    mkdir -p "$tree"
    git archive "$before" | tar -x -C "$tree"
    cp common/trace.h common/trace.c "$tree/common/"
    sed -i 's|hc_lock_acquire(&bucket->lock);|HC_TRACE_LOCK_ACQUIRE(\&bucket->lock, (unsigned)(bucket - cc_buckets));|' \
        "$tree/stage3_pagecache/central_cache.c"
    sed -i 's|hc_lock_acquire(&pc_lock);|HC_TRACE_LOCK_ACQUIRE(\&pc_lock, 0);|' "$tree/stage3_pagecache/page_cache.c"
    (cd "$tree" && bazel --output_base="$scratch/before-base" build "${cache[@]}" //bench:preload_trace >&2 &&
        cp -L bazel-bin/bench/preload_trace "$scratch/before.so" &&
        bazel --output_base="$scratch/before-base" shutdown >&2)
    libs="before after"
fi

# This tree: its commit, marked when the working tree has changes on top.
after_label="$(git rev-parse --short HEAD)"
git diff --quiet HEAD -- || after_label="$after_label with changes"
echo "| workload | threads | tree | ops | locks / 1,000 ops | waited / 1,000 ops | cross-thread frees / 1,000 ops |"
echo "|---|---|---|---|---|---|---|"
for w in ${workloads//,/ }; do
    for t in ${threads//,/ }; do
        for lib in $libs; do
            label=$lib
            [ "$lib" = before ] && label="$before"
            [ "$lib" = after ] && label="$after_label"
            echo "$w $t $label" >&2
            out=$(HCMALLOC_TRACE="$scratch/trace.txt" LD_PRELOAD="$scratch/$lib.so" \
                "$scratch/driver_count" run "$w" "$t" "$scale" 60 2>&1) || { echo "$out" >&2; exit 1; }
            ops=$(sed -n 's/.*count_ops=\([0-9]*\).*/\1/p' <<<"$out")
            cross=$(sed -n 's/.*count_cross_frees=\([0-9]*\).*/\1/p' <<<"$out")
            # trace: "event NAME" lines in enum order, then "total EVENT CLASS N".
            awk -v ops="$ops" -v cross="$cross" -v w="$w" -v t="$t" -v label="$label" '
                $1 == "event" { id[$2] = n++ }
                $1 == "total" { sum[$2] += $4 }
                END {
                    per = ops > 0 ? 1000 / ops : 0
                    printf "| %s | %s | %s | %d | %.2f | %.3f | %.1f |\n", w, t, label, ops,
                        sum[id["lock_taken"]] * per, sum[id["lock_waited"]] * per, cross * per
                }' "$scratch/trace.txt"
        done
    done
done
