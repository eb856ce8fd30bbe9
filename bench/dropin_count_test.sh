#!/bin/bash
# bench/dropin_count_test.sh DRIVER COUNT_DROPIN [size=N] [LIB COUNT]... — the
# drop-in's fast path, counted exactly: callgrind's instructions per
# malloc(32) + free pair through each LIB (preloaded,
# tools/measure/count_dropin.sh) must be exactly COUNT, the figure
# docs/design.md and docs/profiling.md give: fewer fails too, since the
# fast path's every instruction is there for a reason the docs state (the
# pop's prefetch, the free's tag); after a `size=N` argument, malloc(N) +
# free pairs. The profiler library is counted with sampling off
# (HCMALLOC_PROFILE_SAMPLE_BYTES=0): its countdown still runs on every
# malloc, but no sample falls in the loop.
set -u
driver=$1
count=$2
shift 2
status=0
size=32
while [ $# -ge 1 ]; do
    case $1 in size=*) size=${1#size=}; shift; continue ;; esac
    if [ $# -lt 2 ]; then
        echo "FAIL: $1 has no count after it"
        exit 1
    fi
    lib=$1 want=$2
    shift 2
    line=$(HC_COUNT_DRIVER=$driver HC_COUNT_SIZE=$size HCMALLOC_PROFILE_SAMPLE_BYTES=0 "$count" "$lib") || {
        echo "FAIL: $lib: tools/measure/count_dropin.sh failed"
        status=1
        continue
    }
    got=$(echo "$line" | sed -n 's/.*: \([0-9.]*\) instructions per .*/\1/p')
    if [ -n "$got" ] && awk -v got="$got" -v want="$want" 'BEGIN { exit !(got == want) }'; then
        echo "PASS $(basename "$lib"), malloc($size): $got instructions a pair, as documented"
    else
        echo "FAIL $(basename "$lib"), malloc($size): ${got:-no figure} instructions a pair, not the documented $want ($line)"
        status=1
    fi
done
exit $status
