#!/bin/bash
# tools/test.sh — every test of the project: the README's second command.
set -euo pipefail
cd "$(dirname "$0")/.."
bazel test //... "$@"
# The lab generator's own test: Bazel in a scratch workspace (tools/lab_test.sh).
tools/lab_test.sh
