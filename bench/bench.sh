#!/bin/bash
# bench/bench.sh — what `bazel run //bench` starts: bench.py, with python3.
# Not a py_binary: Bazel 4.2's py_binary launcher runs `/usr/bin/env python`,
# and Debian installs only python3.
set -euo pipefail
script=hcmalloc/bench/bench.py
if [ -n "${RUNFILES_DIR:-}" ] && [ -f "$RUNFILES_DIR/$script" ]; then
    exec python3 "$RUNFILES_DIR/$script" "$@"
fi
exec python3 "$0.runfiles/$script" "$@"
