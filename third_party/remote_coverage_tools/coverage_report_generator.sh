#!/bin/sh
echo "hcmalloc: coverage is not collected through Bazel" >&2
exit 1
