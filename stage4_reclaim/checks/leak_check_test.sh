#!/bin/bash
# stage4_reclaim/checks/leak_check_test.sh PROFILER_LIB PROGRAM — the leak check as
# its users read it, on leak_check_program (200 MiB kept in a global array
# by keep_in_global, 20 MiB behind a small block by keep_behind_pointer,
# 10 MiB on the stack of exit_holding_on_stack, 50 MiB lost by leaky: static
# functions that only the program's .symtab names):
#   1. every allocation sampled: leaky's 50 blocks are the leak, exactly,
#      named; the others are reachable, each through its root (a data
#      segment, a marked block, the stack), not a leak;
#   2. the default sampling (1 in 2 MiB): the leak still leads with leaky,
#      and none of the referenced sites is called a leak (keep_behind_pointer's
#      holder is unsampled: only the scan of unsampled blocks finds it);
#   3. the printed google-pprof command names leaky, with its line.
set -u
profiler=$1
program=$2
work="${TEST_TMPDIR:-$(mktemp -d)}"
status=0
fail() { echo "FAIL $*"; status=1; }

run() { # OUT ENV... : the program under the profiler, its report in OUT
    local out=$1
    shift
    env "$@" TMPDIR="$work" LD_PRELOAD="$profiler" "$program" >/dev/null 2>"$work/$out" ||
        fail "the run for $out exited $?"
}
# The first frame under each entry of KIND ("leak" or "reachable").
first_frames() { # FILE KIND
    awk -v kind="$2" '$1 == kind ":" { want = 1; next } want && /^    0x/ { print $2 } { want = 0 }' "$1"
}

# ---- 1. Exact ------------------------------------------------------------------------
run exact.err HCMALLOC_LEAK_CHECK=2 HCMALLOC_PROFILE_SAMPLE_BYTES=1
if grep -A1 '^  leak: ~52428800 bytes in ~50 blocks of 1048576 bytes (50 sampled), allocated at:' "$work/exact.err" |
    grep -q ' leaky+0x'; then
    echo "PASS exact: leaky's 50 MiB are the leak, named from the program's .symtab"
else
    fail "exact: no report of leaky's 50 blocks"; cat "$work/exact.err"
fi
if grep -A1 '^  reachable: ~209715200 bytes in ~200 blocks of 1048576 bytes (200 sampled), allocated at:' "$work/exact.err" |
    grep -q ' keep_in_global+0x'; then
    echo "PASS exact: keep_in_global's 200 MiB are reachable"
else
    fail "exact: keep_in_global's blocks are not reported reachable"; cat "$work/exact.err"
fi
if grep -A1 '^  reachable: ~20971520 bytes in ~20 blocks of 1048576 bytes (20 sampled), allocated at:' "$work/exact.err" |
    grep -q ' keep_behind_pointer+0x'; then
    echo "PASS exact: keep_behind_pointer's 20 MiB are reachable through the block that holds them"
else
    fail "exact: keep_behind_pointer's blocks are not reported reachable"
fi
if grep -A1 '^  reachable: ~10485760 bytes in ~10 blocks of 1048576 bytes (10 sampled), allocated at:' "$work/exact.err" |
    grep -q ' exit_holding_on_stack+0x'; then
    echo "PASS exact: exit_holding_on_stack's 10 MiB are reachable from the exiting stack"
else
    fail "exact: exit_holding_on_stack's blocks are not reported reachable"
fi
if first_frames "$work/exact.err" leak | grep -qE '^(keep_in_global|keep_behind_pointer|exit_holding_on_stack)\+'; then
    fail "exact: referenced blocks are called a leak"
fi

# ---- 2. Sampled, as a user runs it -----------------------------------------------------
run sampled.err HCMALLOC_LEAK_CHECK=1
first=$(first_frames "$work/sampled.err" leak | head -1)
if [[ $first == leaky+* ]]; then
    echo "PASS sampled: the report leads with leaky"
else
    fail "sampled: the first leak is at '$first', not leaky"; cat "$work/sampled.err"
fi
if first_frames "$work/sampled.err" leak | grep -qE '^(keep_in_global|keep_behind_pointer|exit_holding_on_stack)\+'; then
    fail "sampled: referenced blocks are called a leak"; cat "$work/sampled.err"
else
    echo "PASS sampled: keep_in_global, keep_behind_pointer, exit_holding_on_stack are not called a leak"
fi
if grep -q '^  reachable:' "$work/sampled.err"; then
    fail "sampled: level 1 lists the reachable blocks"
fi

# ---- 3. The pprof command it prints ------------------------------------------------------
command=$(sed -n 's/^hcmalloc: leak check: every frame with its line: //p' "$work/sampled.err")
if [ -z "$command" ]; then
    fail "pprof: no command printed"
elif ! out=$($command 2>/dev/null); then
    fail "pprof: '$command' failed"
elif grep -qE '^ +[0-9.]+ +100\.0% +100\.0% .* leaky .*leak_check_program\.c:[0-9]+' <<<"$out"; then
    echo "PASS pprof: the printed command names leaky and its line"
else
    fail "pprof: '$command' does not name leaky's line"; echo "$out"
fi
exit $status
