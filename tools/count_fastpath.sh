#!/bin/bash
# tools/count_fastpath.sh — instructions one hc_malloc(SIZE) + hc_free_sized
# pair executes on the fast path, counted exactly by callgrind.
#
# usage: tools/count_fastpath.sh [STAGE] [SIZE]   (stage1_threadcache, 32)
#
# Builds tools/figures's loop against STAGE with --config=opt, runs it under
# callgrind twice (A and B pairs), collecting only inside hc_malloc and
# hc_free_sized (and what they call). The difference divided by B - A is the
# cost of one steady-state pair: the one-time cost of the first, slow pair
# (creating the thread cache, the refill) cancels out.
set -euo pipefail
cd "$(dirname "$0")/.."

stage=${1:-stage1_threadcache}
size=${2:-32}
pairs_a=1000
pairs_b=11000
bin=bazel-bin/tools/figures/fastpath_loop_$stage

bazel build --config=opt "//tools/figures:fastpath_loop_$stage" >&2

# collect FUNCTION... PAIRS: instructions executed inside the functions.
collect() {
    local pairs=${*: -1} toggles=()
    for fn in "${@:1:$#-1}"; do toggles+=("--toggle-collect=$fn"); done
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "${toggles[@]}" \
        "$bin" "$pairs" "$size" 2>&1 | sed -n 's/^==[0-9]*== Collected : *//p'
}

n=$((pairs_b - pairs_a))
per_pair() { # FUNCTION...: prints the command, both counts and the cost per pair
    local a b toggles=""
    a=$(collect "$@" $pairs_a)
    b=$(collect "$@" $pairs_b)
    for fn in "$@"; do toggles+=" --toggle-collect=$fn"; done
    echo "valgrind --tool=callgrind$toggles $bin $pairs_a $size: $a instructions"
    echo "valgrind --tool=callgrind$toggles $bin $pairs_b $size: $b instructions"
    awk -v a="$a" -v b="$b" -v n=$n -v what="$*" \
        'BEGIN { printf "  %s: %g per pair ((%d - %d) / %d)\n", what, (b - a) / n, b, a, n }'
}

echo "$stage, hc_malloc($size) + hc_free_sized(p, $size), fast path:"
per_pair hc_malloc
per_pair hc_free_sized
per_pair hc_malloc hc_free_sized
