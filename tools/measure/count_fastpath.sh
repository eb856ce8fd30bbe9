#!/bin/bash
# tools/measure/count_fastpath.sh — instructions one hc_malloc(SIZE) + hc_free_sized
# (or hc_free) pair executes on the fast path, counted exactly by callgrind.
#
# usage: tools/measure/count_fastpath.sh [STAGE] [SIZE] [FREE]
#        (stage1_threadcache, 32, hc_free_sized; FREE=hc_free needs stage 3 on:
#        before it, free without a size is not supported)
#
# Builds tools/docs/figures's loop against STAGE with --config=opt, runs it under
# callgrind twice (A and B pairs), collecting only inside hc_malloc and
# FREE (and what they call). The difference divided by B - A is the
# cost of one steady-state pair: the one-time cost of the first, slow pair
# (creating the thread cache, the refill) cancels out.
#
# HC_CONFIG=hardened (any .bazelrc config) counts that build instead, e.g.
# the hardened build's pair (common/harden.h, docs/design.md section 6).
#
# STAGE=stage4_reclaim_trace counts stage 4 with the tier-traffic trace on
# (common/trace.h). Without it the trace's lines are empty statements: the
# plain stages' counts are the same with and without them (docs/stage3.md,
# "The traffic between the tiers, drawn").
set -euo pipefail
cd "$(dirname "$0")/../.."

# The counts the docs quote, per stage, FREE (sized: hc_free_sized,
# unsized: hc_free) and SIZE (32, and 8192: a size above the list table);
# the profiler's with sampling off, since a sample in the loop adds its cost:
# this table is the one place they are written (docs/stage1.md, "What it
# costs"; docs/stage3.md, "What hc_free costs" and "Sizes above the
# table"; the profiler's in docs/profiling.md and docs/dropin.md;
# //docs:docs_check_test holds the docs to it). The script says
# whether it measured the same, and //tools/docs/figures:fastpath_count_test
# holds the tree to the table.
documented_count() {
    case $1/$2/$3 in
        stage1_threadcache/sized/32|stage2_centralcache/sized/32) echo 28 ;;
        stage3_pagecache/sized/32|stage4_reclaim/sized/32) echo 29 ;;
        stage3_pagecache/unsized/32|stage4_reclaim/unsized/32) echo 43 ;;
        stage3_pagecache/sized/8192|stage4_reclaim/sized/8192) echo 60 ;;
        stage4_reclaim_profiler/sized/32) echo 46 ;; # with HCMALLOC_PROFILE_SAMPLE_BYTES=0
    esac
}

stage=${1:-stage1_threadcache}
size=${2:-32}
free_fn=${3:-hc_free_sized}
case $free_fn in
    hc_free_sized) mode=sized ;;
    hc_free) mode=unsized ;;
    *) echo "count_fastpath: FREE must be hc_free_sized or hc_free, not $free_fn" >&2; exit 2 ;;
esac
pairs_a=1000
pairs_b=11000
bin=bazel-bin/tools/docs/figures/fastpath_loop_$stage

# HC_COUNT_BIN: the loop, already built with --config=opt (the test
# //tools/docs/figures:fastpath_count_test passes its own); else build it.
if [ -n "${HC_COUNT_BIN:-}" ]; then
    bin=$HC_COUNT_BIN
else
    bazel build --config=opt ${HC_CONFIG:+--config=$HC_CONFIG} "//tools/docs/figures:fastpath_loop_$stage" >&2
fi

# collect FUNCTION... PAIRS: instructions executed inside the functions.
collect() {
    local pairs=${*: -1} toggles=()
    for fn in "${@:1:$#-1}"; do toggles+=("--toggle-collect=$fn"); done
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "${toggles[@]}" \
        "$bin" "$pairs" "$size" "$mode" 2>&1 | sed -n 's/^==[0-9]*== Collected : *//p'
}

n=$((pairs_b - pairs_a))
per_pair() { # FUNCTION...: prints the command, both counts and the cost per pair
    local a b toggles=""
    a=$(collect "$@" $pairs_a)
    b=$(collect "$@" $pairs_b)
    for fn in "$@"; do toggles+=" --toggle-collect=$fn"; done
    echo "valgrind --tool=callgrind$toggles $bin $pairs_a $size $mode: $a instructions"
    echo "valgrind --tool=callgrind$toggles $bin $pairs_b $size $mode: $b instructions"
    awk -v a="$a" -v b="$b" -v n=$n -v what="$*" \
        'BEGIN { printf "  %s: %g per pair ((%d - %d) / %d)\n", what, (b - a) / n, b, a, n }'
    last_per_pair=$(awk -v a="$a" -v b="$b" -v n=$n 'BEGIN { printf "%g", (b - a) / n }')
}

if [ "$mode" = sized ]; then call="hc_free_sized(p, $size)"; else call="hc_free(p)"; fi
echo "$stage, hc_malloc($size) + $call, fast path:"
per_pair hc_malloc
per_pair "$free_fn"
per_pair hc_malloc "$free_fn"

documented=$(documented_count "$stage" "$mode" "$size")
case $stage in
    *_profiler) [ "${HCMALLOC_PROFILE_SAMPLE_BYTES:-}" = 0 ] || documented= ;;
esac
if [ -n "$documented" ] && [ -z "${HC_CONFIG:-}" ]; then
    if [ "$last_per_pair" = "$documented" ]; then
        echo "  the documented count ($documented, tools/measure/count_fastpath.sh's table): the same"
    else
        echo "  the documented count is $documented (tools/measure/count_fastpath.sh's table): update it and the docs" >&2
        exit 3
    fi
fi
