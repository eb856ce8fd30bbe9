#!/bin/bash
# tools/extra_checks.sh — the checks `bazel test` cannot run because they
# need another compiler, or are scripts over the whole tree. tools/test.sh
# runs this after `bazel test //...` passes (the build configurations,
# --config=opt, debug, asan and tsan, are tools/test.sh's own parts); each
# line below is one check, and any failure fails the whole.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0

# libFuzzer (clang) on every stage: a fixed number of runs from a fixed seed.
tools/measure/fuzz.sh || status=1

# Lesson diffs: tools/labs/stage_diff.sh runs for every pair of stages.
for pair in "1 2" "2 3" "3 4"; do
    tools/labs/stage_diff.sh $pair >/dev/null || status=1
done

exit $status
