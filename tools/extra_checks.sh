#!/bin/bash
# tools/extra_checks.sh — the checks `bazel test //...` cannot run because
# they need another compiler or build mode. tools/test.sh runs this after
# `bazel test //...` passes; each line below is one check, and any failure
# fails the whole.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0

# libFuzzer (clang) on every stage: a fixed number of runs from a fixed seed.
tools/fuzz.sh || status=1

exit $status
