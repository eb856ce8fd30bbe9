#!/bin/bash
# stage4_reclaim/checks/dropin_abuse_test.sh DEFAULT_LIB HARDENED_LIB CHECK —
# runs each of dropin_abuse_check's heap-misuse cases under both drop-ins.
# The hardened library must stop every one: killed by SIGABRT, one
# "hcmalloc: ..." line on stderr, no NOT_CAUGHT. The default library must do
# what docs/design.md (section 6) says: stop the double frees (when the
# list is cut, or at the call), and follow a forged link (NOT_CAUGHT: the
# second malloc returns the program's own buffer). HC_CONFIG (the BUILD
# file's, from --config) is "debug" where the default library is the debug
# build, which checks free_sized's size at the call.
set -u
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
default_lib=$(abs "$1")
hardened_lib=$(abs "$2")
check=$3
# case  default-build outcome
cases=(
    "uaf_link not_caught"
    "overflow_link not_caught"
    "double_free_cold caught"
    "double_free_warm caught"
    "double_free_aba caught"
    "double_free_threads caught"
    "never_handed_out caught"
    "interior_free caught"
    "next_slot caught"
    "free_sized_wrong_size $([[ ${HC_CONFIG:-} == debug ]] && echo caught || echo not_caught)"
    "free_aligned_sized_wrong_size not_caught"
    "usable_size_after_free not_caught"
)
status=0
run() { # LIB CASE WANT
    local out err rc
    err=$(mktemp)
    out=$(LD_PRELOAD="$1" "$check" "$2" 2>"$err")
    rc=$?
    local got=other
    if [[ $rc -eq 134 && $out != *NOT_CAUGHT* ]] && grep -q '^hcmalloc: ' "$err" && [[ $(wc -l <"$err") -eq 1 ]]; then
        got=caught
    elif [[ $rc -eq 0 && $out == *NOT_CAUGHT* ]]; then
        got=not_caught
    fi
    if [[ $got == "$3" ]]; then
        echo "ok   $(basename "$1") $2: $got $(head -c 200 "$err")"
    else
        echo "FAIL $(basename "$1") $2: wanted $3, got exit $rc, stdout '$out', stderr '$(cat "$err")'"
        status=1
    fi
    rm -f "$err"
}
for entry in "${cases[@]}"; do
    read -r name want <<<"$entry"
    run "$default_lib" "$name" "$want"
    run "$hardened_lib" "$name" caught
done
exit $status
