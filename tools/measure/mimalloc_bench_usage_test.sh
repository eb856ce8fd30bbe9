#!/bin/bash
# tools/measure/mimalloc_bench_usage_test.sh — tools/measure/mimalloc_bench.sh's answers to
# bad arguments: exit status 2 and one line saying what is wrong, before it
# builds anything (so no checkout of mimalloc-bench is needed).
# usage: mimalloc_bench_usage_test.sh PATH_TO_MIMALLOC_BENCH_SH
set -uo pipefail
script=$1
source "$(dirname "$0")/usage_test_lib.sh" # fail, expect
# Something shaped like a checkout: the script looks for bench/CMakeLists.txt
# and bench/larson before it reads the options that need one.
fake=${TEST_TMPDIR:-$(mktemp -d)}/checkout
mkdir -p "$fake/bench/larson"
touch "$fake/bench/CMakeLists.txt"

expect "usage: tools/measure/mimalloc_bench.sh MIMALLOC_BENCH_CHECKOUT"
expect "is not a mimalloc-bench checkout" "$fake/nonexistent"
expect "usage:" "$fake" --no-such-option
expect "usage:" "$fake" --rounds
expect "--rounds must be a positive number" "$fake" --rounds 0
HC_BENCH_PEERS=peer=/nonexistent/lib.so expect "HC_BENCH_PEERS: no library in 'peer=/nonexistent/lib.so'" "$fake"
expect "--rounds must be a positive number" "$fake" --rounds two
expect "no allocator 'nosuch'" "$fake" --allocators glibc,nosuch
expect "the ratios need glibc" "$fake" --allocators dropin
echo "PASS: mimalloc_bench.sh's bad arguments"
