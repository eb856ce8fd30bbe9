#!/bin/bash
# tools/measure/paired_runs_usage_test.sh — tools/measure/paired_runs.sh's
# answers to bad arguments: exit status 2 and one line saying what is wrong,
# before it builds or runs anything.
# usage: paired_runs_usage_test.sh PATH_TO_PAIRED_RUNS_SH
set -uo pipefail
script=$1
source "$(dirname "$0")/usage_test_lib.sh" # fail, expect
lib=$(mktemp)
trap 'rm -f "$lib"' EXIT

expect "usage: tools/measure/paired_runs.sh" --no-such-option
expect "usage:" "$lib" mapchurn 1
expect "usage:" "$lib" mapchurn 1 1 extra
expect "usage:" "$lib" mapchurn 1 1 --pairs
expect "--pairs must be a positive number" "$lib" mapchurn 1 1 --pairs 0
expect "--pin must be a CPU number" "$lib" mapchurn 1 1 --pin first
expect "THREADS must be a positive number" "$lib" mapchurn 0 1
expect "SCALE must be a number" "$lib" mapchurn 1 big
expect "no such library: /nonexistent/lib.so" /nonexistent/lib.so mapchurn 1 1
expect "no such library: /nonexistent/after.so" "$lib" mapchurn 1 1 --after /nonexistent/after.so
echo "PASS: paired_runs.sh's bad arguments"
