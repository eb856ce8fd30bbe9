#!/bin/bash
# tools/test.sh — every test of the project: the README's second command.
# Runs `bazel test //...` (every stage with its plain, TSan and Valgrind
# flavours, common/, bench smoke, labs), then the checks that need another
# compiler or build mode (tools/extra_checks.sh, if present), the lab
# generator's test (tools/lab_test.sh), and ends with
# one summary line: "tests: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."

log=$(mktemp)
trap 'rm -f "$log"' EXIT
bazel test //... "$@" 2>&1 | tee "$log"
bazel_status=${PIPESTATUS[0]}

# One line per test target in Bazel's summary: "//pkg:target   PASSED in 1.2s".
passed=$(grep -cE '^//[^ ]+ +(\(cached\) )?PASSED' "$log")
failed=$(grep -cE '^//[^ ]+ +(\(cached\) )?(FAILED|TIMEOUT|NO STATUS|FAILED TO BUILD|INCOMPLETE)' "$log")

extra_status=0
if [ -x tools/extra_checks.sh ] && [ "$bazel_status" -eq 0 ]; then
    tools/extra_checks.sh
    extra_status=$?
    if [ "$extra_status" -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
fi

# The lab generator's test: skeletons build and fail, reference copies pass
# (Bazel in a scratch workspace of its own; tools/lab_test.sh).
lab_status=0
if [ "$bazel_status" -eq 0 ]; then
    tools/lab_test.sh
    lab_status=$?
    if [ "$lab_status" -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
fi

if [ "$bazel_status" -ne 0 ] && [ "$failed" -eq 0 ]; then
    failed=1 # the build itself failed before any test ran
fi
echo "tests: $passed passed, $failed failed"
[ "$bazel_status" -eq 0 ] && [ "$extra_status" -eq 0 ] && [ "$lab_status" -eq 0 ]
