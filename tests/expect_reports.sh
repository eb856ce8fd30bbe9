#!/bin/bash
# Runs tests/misuse.c's mistakes under a memory checker and fails unless the
# checker reports each one (and reports nothing for the clean run).
# usage: expect_reports.sh MISUSE_BINARY valgrind|asan
# The binary must be built for that checker (tests/reliability.bzl does it):
# common/track.h is what lets the checker see hcmalloc's blocks at all.
set -uo pipefail
misuse=$1
tool=$2
logs=${TEST_UNDECLARED_OUTPUTS_DIR:-$(mktemp -d)}
failures=0

run() { # MODE -> exit status in $rc, output in $log
    log="$logs/$tool-$1.log"
    case $tool in
    valgrind)
        # Leaks are looked for where they are the point (and where there must
        # be none); a mode that breaks the heap stops without cleaning up.
        local leaks=(--leak-check=no)
        case $1 in clean | leak)
            leaks=(--leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite)
            ;;
        esac
        valgrind --tool=memcheck --error-exitcode=99 "${leaks[@]}" \
            --track-origins=no --quiet "$misuse" "$1" >"$log" 2>&1
        ;;
    asan)
        "$misuse" "$1" >"$log" 2>&1
        ;;
    esac
    rc=$?
}

# expect MODE WANTED_EXIT PATTERN...: the run exits so and its output holds
# every (extended) regular expression.
expect() {
    local mode=$1 want=$2
    shift 2
    run "$mode"
    local ok=1
    if [ "$want" = nonzero ]; then [ "$rc" -ne 0 ] || ok=0; else [ "$rc" -eq "$want" ] || ok=0; fi
    for pattern in "$@"; do grep -Eq -- "$pattern" "$log" || ok=0; done
    if [ $ok -eq 1 ]; then
        echo "ok    $tool $mode (exit $rc)"
        for pattern in "$@"; do grep -Em1 -- "$pattern" "$log" | sed 's/^==[0-9]*== */        /'; done
    else
        echo "FAIL  $tool $mode: wanted exit $want and /$*/, got exit $rc:"
        sed 's/^/      /' "$log" | head -40
        failures=$((failures + 1))
    fi
}

case $tool in
valgrind)
    command -v valgrind >/dev/null || { echo "valgrind is not installed: run tools/setup.sh" >&2; exit 1; }
    expect clean 0
    expect use_after_free 99 "Invalid read of size 1" "inside a block of size 32 free'd"
    # The list it broke may stop the program later (an abort): the report is what counts.
    expect double_free nonzero "Invalid free\(\)"
    expect overflow 99 "Invalid write of size 1"
    expect overflow_slack 99 "Invalid write of size 1" "after a block of size 20 alloc'd"
    expect overflow_large 99 "Invalid write of size 1"
    expect leak 99 "100 bytes in 1 blocks are definitely lost"
    ;;
asan)
    # Poisoning finds bad accesses; double free and leaks are memcheck's part.
    expect clean 0
    expect use_after_free nonzero "AddressSanitizer: use-after-poison" "READ of size 1"
    expect overflow nonzero "AddressSanitizer: use-after-poison" "WRITE of size 1"
    expect overflow_slack nonzero "AddressSanitizer: use-after-poison" "WRITE of size 1"
    expect overflow_large nonzero "AddressSanitizer: use-after-poison" "WRITE of size 1"
    ;;
*)
    echo "usage: expect_reports.sh MISUSE_BINARY valgrind|asan" >&2
    exit 2
    ;;
esac

echo "$($misuse features): $failures failure(s); logs in $logs"
[ $failures -eq 0 ]
