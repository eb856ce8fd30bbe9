#!/bin/bash
# tests/layering_test.sh — runs tests/layering_check.py (each stage holds its
# own layer; common/ names no stage) on the files tests/BUILD passes.
set -euo pipefail
exec python3 "$(dirname "$0")/layering_check.py" "$@"
