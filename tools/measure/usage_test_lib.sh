# tools/measure/usage_test_lib.sh — sourced by the scripts' usage tests
# (mimalloc_bench_usage_test.sh, threads_vs_processes_usage_test.sh,
# paired_runs_usage_test.sh): what a measuring script must do with a bad
# argument, before it builds or runs anything: exit status 2 and one line
# on stderr saying what is wrong.
# The test sets `script` (the script under test) before it calls `expect`.

fail() { echo "FAIL: $*" >&2; exit 1; }

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
