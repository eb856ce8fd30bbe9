#!/bin/bash
# tools/measure/mimalloc_bench_usage_test.sh — tools/measure/mimalloc_bench.sh's answers to
# bad arguments: exit status 2 and one line saying what is wrong, before it
# builds anything (so no checkout of mimalloc-bench is needed).
# usage: mimalloc_bench_usage_test.sh PATH_TO_MIMALLOC_BENCH_SH
set -uo pipefail
script=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
# Something shaped like a checkout: the script looks for bench/CMakeLists.txt
# and bench/larson before it reads the options that need one.
fake=${TEST_TMPDIR:-$(mktemp -d)}/checkout
mkdir -p "$fake/bench/larson"
touch "$fake/bench/CMakeLists.txt"

expect() { # EXPECTED_TEXT ARGS...: exit status 2, one line on stderr containing the text
    local expected=$1
    shift
    local err status
    err=$("$script" "$@" 2>&1 >/dev/null)
    status=$?
    [ "$status" -eq 2 ] || fail "'$*' exited with $status, not 2: $err"
    [ "$(wc -l <<<"$err")" -eq 1 ] || fail "'$*' printed more than one line: $err"
    grep -qF -- "$expected" <<<"$err" || fail "'$*' said '$err', not '$expected'"
}

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
