#!/bin/bash
# bench/bench.sh — what `bazel run //bench` starts: bench.py, with python3.
# Not a py_binary: Bazel 4.2's py_binary launcher runs `/usr/bin/env python`,
# and Debian installs only python3.
set -euo pipefail
script=hcmalloc/bench/bench.py
# bench.py imports its renderers (report.py, chart.py); the runfiles link
# to the source tree, where Python would leave a __pycache__/ behind.
export PYTHONDONTWRITEBYTECODE=1
if [ -n "${RUNFILES_DIR:-}" ] && [ -f "$RUNFILES_DIR/$script" ]; then
    exec python3 "$RUNFILES_DIR/$script" "$@"
fi
exec python3 "$0.runfiles/$script" "$@"
