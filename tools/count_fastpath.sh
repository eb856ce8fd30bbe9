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

collect() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        --toggle-collect=hc_malloc --toggle-collect=hc_free_sized \
        "$bin" "$1" "$size" 2>&1 | sed -n 's/^==[0-9]*== Collected : *//p'
}

a=$(collect $pairs_a)
b=$(collect $pairs_b)
echo "valgrind --tool=callgrind --toggle-collect=hc_malloc --toggle-collect=hc_free_sized $bin $pairs_a $size: $a instructions"
echo "valgrind --tool=callgrind --toggle-collect=hc_malloc --toggle-collect=hc_free_sized $bin $pairs_b $size: $b instructions"
awk -v a="$a" -v b="$b" -v n=$((pairs_b - pairs_a)) -v s="$stage" -v z="$size" 'BEGIN {
    printf "%s: %g instructions per hc_malloc(%s) + hc_free_sized pair ((%d - %d) / %d)\n", s, (b - a) / n, z, b, a, n
}'
