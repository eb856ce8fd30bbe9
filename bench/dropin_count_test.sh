#!/bin/bash
# bench/dropin_count_test.sh DRIVER COUNT_DROPIN [LIB MAX]... — the drop-in's
# fast path, counted exactly: callgrind's instructions per malloc(32) + free
# pair through each LIB (preloaded, tools/measure/count_dropin.sh) must be at most
# MAX, the figure docs/design.md and docs/profiling.md give. The profiler
# library is counted with sampling off (HCMALLOC_PROFILE_SAMPLE_BYTES=0): its
# countdown still runs on every malloc, but no sample falls in the loop.
set -u
driver=$1
count=$2
shift 2
status=0
while [ $# -ge 2 ]; do
    lib=$1 max=$2
    shift 2
    line=$(HC_COUNT_DRIVER=$driver HCMALLOC_PROFILE_SAMPLE_BYTES=0 "$count" "$lib") || {
        echo "FAIL: $lib: tools/measure/count_dropin.sh failed"
        status=1
        continue
    }
    got=$(echo "$line" | sed -n 's/.*: \([0-9.]*\) instructions per .*/\1/p')
    if [ -n "$got" ] && awk -v got="$got" -v max="$max" 'BEGIN { exit !(got <= max) }'; then
        echo "PASS $(basename "$lib"): $got instructions a pair (at most $max)"
    else
        echo "FAIL $(basename "$lib"): ${got:-no figure} instructions a pair, more than $max ($line)"
        status=1
    fi
done
exit $status
