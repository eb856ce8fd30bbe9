#!/bin/bash
# tools/lab_test.sh — proves tools/make_lab.py works, for each stage that has
# LAB markers (or the stages named as arguments):
#   1. the reference copy (make_lab.py --reference) is a complete workspace:
#      its unit and conformance tests pass in it;
#   2. the lab skeleton builds and fails its tests: `bazel test` on the same
#      targets exits 3 (built, tests failed), not 1 (build failed), and the
#      shared conformance test is among the failures.
# "The same targets" are //STAGE:all less the stress test and its TSan,
# Valgrind and debug flavours: `bazel test //...` in the main tree runs those
# on the same code, and here they would double the time (each flavour
# rebuilds googletest and the stage with other flags: 814 s against 436 s
# for the four stages, measured on a shared 2-core machine). Every target
# of //STAGE:all, flavours included, is still analysed in both copies
# (`bazel build --nobuild`), which proves the lab workspace has the packages
# and rules they need.
# Both run in one scratch workspace with its own output base (a Bazel server
# of its own, shut down at the end), so googletest is built once for all
# stages and the developer's workspace is never touched.
#
# First tools/make_lab_test.py checks the marker parsing on its own.
#
# usage: tools/lab_test.sh [STAGE...]          called by tools/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

if [ $# -gt 0 ]; then
    stages=("$@")
else
    mapfile -t stages < <(tools/make_lab.py --list | sed -n 's#^\(stage[0-9]*_[a-z0-9]*\)/.*#\1#p' | sort -u)
fi
if [ ${#stages[@]} -eq 0 ]; then
    echo "lab_test: no stage has LAB markers" >&2
    exit 1
fi

echo "== lab_test: marker parsing (tools/make_lab_test.py)"
python3 tools/make_lab_test.py

scratch=$(mktemp -d "${TMPDIR:-/tmp}/hcmalloc-lab-test.XXXXXX")
workspace=$scratch/lab
output_base=$scratch/output_base
lab_bazel() { (cd "$workspace" && bazel --output_base="$output_base" "$@"); }
cleanup() {
    [ -d "$workspace" ] && lab_bazel shutdown >/dev/null 2>&1 || true
    chmod -R u+w "$scratch" 2>/dev/null || true
    rm -rf "$scratch"
}
trap cleanup EXIT
trap "exit 130" INT TERM  # so that the EXIT trap cleans up

# Flags: no colour or progress chatter in the log; --keep_going so a skeleton
# reports every target, not just the first failure.
flags=(--color=no --curses=no --noshow_progress --keep_going)

failures=0
for stage in "${stages[@]}"; do
    stage_start=$SECONDS
    echo "== lab_test: $stage, reference copy"
    mkdir -p "$workspace"
    "$repo/tools/make_lab.py" --reference --force "$stage" "$workspace" >/dev/null
    # The stage's own tests plus the shared conformance test: the rest of the
    # shared suite (stress, checker, fuzz and fault flavours), the flavour
    # rules of the stage's own BUILD (_tsan, _valgrind, debug_test) and the
    # drop-in's real-program and fork loops already run in the main tree, and
    # here would only add minutes (and googletest builds per flavour).
    mapfile -t plain < <( (lab_bazel query --noshow_progress \
                              "tests(//$stage:all) except attr(generator_function, hc_stage_tests, //$stage:all)" \
                              2>/dev/null; echo "//$stage:conformance_test") |
                         grep -vE '(_tsan|_valgrind|_asan|:debug_test|:dropin_[a-z_]+|:fork_test)$')
    if ! printf '%s\n' "${plain[@]}" | grep -qx "//$stage:conformance_test"; then
        echo "FAIL: bazel query finds no conformance_test in the reference copy of $stage" >&2
        failures=$((failures + 1))
        continue
    fi
    if ! lab_bazel build --nobuild "${flags[@]}" "//$stage:all" >"$scratch/reference.log" 2>&1; then
        cat "$scratch/reference.log"
        echo "FAIL: the reference copy of $stage does not analyse: the lab workspace is incomplete" >&2
        failures=$((failures + 1))
        continue
    fi
    if lab_bazel test "${flags[@]}" "${plain[@]}" >"$scratch/reference.log" 2>&1; then
        grep -E '^//.* (PASSED|FAILED|NO STATUS)' "$scratch/reference.log" || true
        echo "ok: the reference copy of $stage passes"
    else
        cat "$scratch/reference.log"
        echo "FAIL: the reference copy of $stage does not pass: the lab workspace is incomplete" >&2
        failures=$((failures + 1))
        continue
    fi

    echo "== lab_test: $stage, skeleton"
    "$repo/tools/make_lab.py" --force "$stage" "$workspace"
    rc=0
    lab_bazel build --nobuild "${flags[@]}" "//$stage:all" >"$scratch/skeleton.log" 2>&1 || rc=$?
    if [ $rc -ne 0 ]; then
        cat "$scratch/skeleton.log"
        echo "FAIL: the $stage skeleton does not analyse: bazel exit $rc" >&2
        failures=$((failures + 1))
        continue
    fi
    lab_bazel test "${flags[@]}" "${plain[@]}" >"$scratch/skeleton.log" 2>&1 || rc=$?
    grep -E '^//.* (PASSED|FAILED|NO STATUS)' "$scratch/skeleton.log" || true
    if [ $rc -eq 3 ] && grep -qE "^//$stage:conformance_test .*FAILED" "$scratch/skeleton.log"; then
        echo "ok: the $stage skeleton builds and fails its tests (bazel exit 3; stage took $((SECONDS - stage_start))s)"
    else
        cat "$scratch/skeleton.log"
        echo "FAIL: the $stage skeleton should build and fail its tests: bazel exit $rc, want 3" >&2
        failures=$((failures + 1))
    fi
done

if [ $failures -ne 0 ]; then
    echo "lab_test: $failures stage(s) failed" >&2
    exit 1
fi
echo "lab_test: every lab (${stages[*]}) builds, fails its tests, and its reference passes (${SECONDS}s)"
