#!/bin/bash
# Runs a test binary under valgrind memcheck; any memcheck error fails it.
# usage: valgrind_test.sh BINARY [ARGS...]
set -euo pipefail
if ! command -v valgrind >/dev/null; then
    echo "valgrind is not installed: run tools/setup.sh" >&2
    exit 1
fi
exec valgrind --tool=memcheck --error-exitcode=99 --leak-check=no \
    --track-origins=no --fair-sched=yes --quiet "$@"
