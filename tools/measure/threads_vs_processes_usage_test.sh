#!/bin/bash
# tools/measure/threads_vs_processes_usage_test.sh — tools/measure/threads_vs_processes.sh's
# answers to bad arguments: exit status 2 and one line saying what is wrong,
# before it builds or runs anything.
# usage: threads_vs_processes_usage_test.sh PATH_TO_THREADS_VS_PROCESSES_SH
set -uo pipefail
script=$1
source "$(dirname "$0")/usage_test_lib.sh" # fail, expect

expect "usage: tools/measure/threads_vs_processes.sh" --no-such-option
expect "usage:" --rounds
expect "usage:" --before
expect "--rounds must be a positive number" --rounds 0
expect "--rounds must be a positive number" --rounds two
expect "--scales must be numbers separated by commas" --scales 5,x
expect "no such library: /nonexistent/lib.so" --before /nonexistent/lib.so
echo "PASS: threads_vs_processes.sh's bad arguments"
