#!/bin/bash
# bench/driver_count_test.sh DRIVER_COUNT — the counting shim
# (bench/shim_count.c) counts what tools/measure/scaling_counts.sh reports: in
# xthread every free is of a block another thread allocated, in tight none
# is, and every malloc and free is an operation.
set -euo pipefail
driver=$1
field() { sed -n "s/.*$1=\([0-9]*\).*/\1/p" <<<"$2" | head -1; }
out=$("$driver" run xthread 1 0.01 10 2>&1)
pairs=$(field pairs "$out")
[ "$(field count_cross_frees "$out")" = "$pairs" ] || { echo "xthread: cross-thread frees != pairs: $out"; exit 1; }
[ "$(field count_ops "$out")" -ge $((2 * pairs)) ] || { echo "xthread: fewer operations than 2 per pair: $out"; exit 1; }
out=$("$driver" run tight 2 0.01 10 2>&1)
[ "$(field count_cross_frees "$out")" = 0 ] || { echo "tight: a cross-thread free counted: $out"; exit 1; }
[ "$(field count_ops "$out")" -ge $((2 * $(field pairs "$out"))) ] || { echo "tight: operations lost: $out"; exit 1; }
echo "PASS"
