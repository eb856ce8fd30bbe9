#!/bin/bash
# stage4_reclaim/checks/dropin_run_checks.sh LIB PROGRAM... — runs each check
# program with LIB preloaded; each must exit 0 and print its PASS line (the
# programs themselves verify that libhcmalloc.so answered their calls).
set -u
# No program given would be a test that cannot fail: a BUILD slip, not a pass.
[ $# -ge 2 ] || { echo "usage: dropin_run_checks.sh LIB PROGRAM..." >&2; exit 2; }
lib="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
shift
status=0
for program in "$@"; do
    if out=$(LD_PRELOAD="$lib" "$program" 2>&1) && grep -q ": PASS" <<<"$out"; then
        echo "$out"
    else
        echo "FAIL: $program under LD_PRELOAD=$lib"
        echo "$out"
        status=1
    fi
done
exit $status
