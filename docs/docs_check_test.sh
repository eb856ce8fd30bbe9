#!/bin/bash
# docs/docs_check_test.sh — //docs:docs_check_test: tools/docs/docs_check.py over
# the tree as the test's runfiles hold it (docs/BUILD lists what they hold).
# usage: docs_check_test.sh DOCS_CHECK_PY DOCS_FIGURES
set -euo pipefail
root=${RUNFILES_DIR:-$0.runfiles}/hcmalloc
exec python3 "$1" --figures "$2" "$root"
