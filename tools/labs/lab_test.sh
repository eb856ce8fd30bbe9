#!/bin/bash
# tools/labs/lab_test.sh — proves tools/labs/make_lab.py works, for each stage that has
# LAB markers (or the stages named as arguments):
#   1. the reference copy (make_lab.py --reference) is a complete workspace:
#      its unit and conformance tests pass in it;
#   2. the lab skeleton builds and fails its tests: `bazel test` on the same
#      targets exits 3 (built, tests failed), not 1 (build failed), and the
#      shared conformance test is among the failures.
# "The same targets" are //STAGE:all less the stress test and its TSan,
# Valgrind and debug flavours: `bazel test //...` in the main tree runs those
# on the same code, and here they would double the time (each flavour
# rebuilds the stage and its tests with other flags: 814 s against 436 s
# for the four stages, measured on a shared 2-core machine when googletest
# too was rebuilt). Every target
# of //STAGE:all, flavours included, is still analysed in both copies
# (`bazel build --nobuild`), which proves the lab workspace has the packages
# and rules they need.
# Both run in one scratch workspace with its own output base (a Bazel server
# of its own, shut down at the end), so what the stages share is built once
# and the developer's workspace is never touched.
#
# After the reference copy passes, the rules only a dedicated test sees
# (lab 2's refill that keeps its returned object, its scavenge and its span
# race, each met deterministically; lab 3's store-releases and lock order,
# lab 4's idle-only stealing) are broken on purpose there (tools/labs/mutants.py
# --in: seconds each) and must fail.
# Then, in the skeleton, the handout (LAB.md):
#   3. names every test target of //STAGE:all, each test its tables name
#      is one of them, and every file path it names exists in the
#      workspace (no question points outside it);
#      every code name in its backticks is in the workspace or declared not
#      to be, and its yardstick table is tools/labs/yardsticks.json's
#      (tools/labs/handout_check.py);
#   4. every command in its ```sh blocks runs: `tools/labs/make_lab.py STAGE labN`
#      in a scratch copy of the clone (after which the clone's `bazel query
#      //...` must still work: .bazelignore), `bazel` commands analysed in
#      the workspace (--nobuild: the reference copy ran the tests already),
#      `tools/labs/grade.py` for real (its preview sheet must come out, below
#      half marks for a skeleton); `cd` and `tools/setup.sh` are skipped.
# And once, if stage2_centralcache is among the stages, the grader itself:
#   5. tools/labs/grade.py --handin on a class of three hand-ins of lab 2
#      (tools/labs/class_handins.py: the reference, the leaky fetch_drops_span_rest
#      and a half-done one), graded in one invocation, must rank them
#      reference > leaky > half, the reference passing every test, the leaky
#      one losing space points and conformance points with the assertion
#      quoted. HC_LAB_TEST_GRADER=0 skips 4's grade runs and 5.
#
# First tools/labs/make_lab_test.py checks the marker parsing on its own.
#
# usage: tools/labs/lab_test.sh [STAGE...]          called by tools/test.sh
set -euo pipefail

# contains WORD ITEM...: whether WORD is one of the items. (Not `printf | grep
# -q`: under pipefail grep's early exit can fail printf with SIGPIPE.)
contains() {
    local want=$1 item
    shift
    for item in "$@"; do [[ $item == "$want" ]] && return 0; done
    return 1
}
cd "$(dirname "$0")/../.."
repo=$PWD

if [ $# -gt 0 ]; then
    stages=("$@")
else
    mapfile -t stages < <(tools/labs/make_lab.py --list | sed -n 's#^\(stage[0-9]*_[a-z0-9]*\)/.*#\1#p' | sort -u)
fi
if [ ${#stages[@]} -eq 0 ]; then
    echo "lab_test: no stage has LAB markers" >&2
    exit 1
fi

echo "== lab_test: marker parsing (tools/labs/make_lab_test.py)"
python3 tools/labs/make_lab_test.py

scratch=$(mktemp -d "${TMPDIR:-/tmp}/hcmalloc-lab-test.XXXXXX")
workspace=$scratch/lab
output_base=$scratch/output_base
# HC_BAZEL_DISK_CACHE (tools/test.sh sets it): the main tree's disk cache, so
# that what a lab workspace builds byte for byte as the main tree did
# (googletest, the reference copy, a skeleton's unchanged files) is reused.
disk_cache=()
[ -n "${HC_BAZEL_DISK_CACHE:-}" ] && disk_cache=(--disk_cache="$HC_BAZEL_DISK_CACHE")
lab_bazel() {
    local command=$1
    shift
    case $command in
    build | test) set -- "$command" "${disk_cache[@]}" "$@" ;;
    *) set -- "$command" "$@" ;;
    esac
    (cd "$workspace" && bazel --output_base="$output_base" "$@")
}
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

grader=${HC_LAB_TEST_GRADER:-1}

# A copy of the clone as git sees it (tracked and new files, nothing ignored):
# the handout's generate command runs there, never in the developer's tree.
clone=$scratch/clone
mkdir -p "$clone"
(git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$clone") 2>/dev/null ||
    (cd "$repo" && tar --exclude='./bazel-*' --exclude='./lab[0-9]*' -cf - . | tar -C "$clone" -xf -)
clone_queried=0

# Runs the commands of LAB.md's ```sh blocks for $stage; returns the failures.
run_handout_commands() {
    local stage=$1 handout=$workspace/LAB.md bad=0 line cmd
    while IFS= read -r line; do
        cmd=${line%%#*}
        cmd=$(echo "$cmd" | sed 's/[[:space:]]*$//')
        [ -z "$cmd" ] && continue
        case "$cmd" in
        "cd "* | tools/setup.sh) echo "  skipped: $cmd" ;;
        tools/labs/make_lab.py*)
            echo "  run in a copy of the clone: $cmd"
            if ! (cd "$clone" && eval "$cmd" >/dev/null); then
                echo "FAIL: the handout's '$cmd' fails from the clone's root" >&2
                bad=$((bad + 1))
            elif [ $clone_queried -eq 0 ]; then
                clone_queried=1
                if ! (cd "$clone" && bazel --output_base="$scratch/clone_ob" query //... >"$scratch/query.log" 2>&1) ||
                    grep -q "^//lab" "$scratch/query.log"; then
                    tail -20 "$scratch/query.log"
                    echo "FAIL: after '$cmd', the clone's bazel query //... fails or sees the lab" >&2
                    bad=$((bad + 1))
                fi
                (cd "$clone" && bazel --output_base="$scratch/clone_ob" shutdown >/dev/null 2>&1) || true
            fi ;;
        "bazel test"*":all"* | "bazel build"*)
            # Every flavour: analysed only (the TSan, ASan and Valgrind builds
            # would take minutes, and the main tree runs them).
            echo "  analysed in the skeleton: $cmd"
            local rest=${cmd#bazel * } arg targets=()
            for arg in $rest; do [[ $arg == --* ]] || targets+=("$arg"); done
            if ! lab_bazel build --nobuild "${flags[@]}" "${targets[@]}" >"$scratch/handout.log" 2>&1; then
                tail -20 "$scratch/handout.log"
                echo "FAIL: the handout's '$cmd' does not analyse in the lab workspace" >&2
                bad=$((bad + 1))
            fi ;;
        "bazel test"*)
            # Plain targets: run, and in a skeleton they build and fail (exit 3).
            echo "  run in the skeleton: $cmd"
            local rc=0
            eval "lab_bazel ${cmd#bazel } --color=no --curses=no --noshow_progress" >"$scratch/handout.log" 2>&1 || rc=$?
            if [ $rc -ne 0 ] && [ $rc -ne 3 ]; then
                tail -20 "$scratch/handout.log"
                echo "FAIL: the handout's '$cmd' exits $rc in the lab workspace (want 0 or 3)" >&2
                bad=$((bad + 1))
            fi ;;
        tools/labs/stage_diff.sh*)
            echo "  run in the skeleton: $cmd"
            if ! (cd "$workspace" && eval "$cmd" >"$scratch/handout.log" 2>&1) || [ ! -s "$scratch/handout.log" ]; then
                tail -20 "$scratch/handout.log"
                echo "FAIL: the handout's '$cmd' fails, or prints nothing, in the lab workspace" >&2
                bad=$((bad + 1))
            fi ;;
        tools/labs/grade.py*)
            if [ "$grader" = 0 ]; then echo "  skipped (HC_LAB_TEST_GRADER=0): $cmd"; continue; fi
            echo "  run in the skeleton: $cmd --reps 1"
            rm -f "$workspace/grade.json"
            if ! (cd "$workspace" && HC_GRADE_OUTPUT_BASE=$output_base \
                    eval "$cmd --reps 1 --json grade.json" >"$scratch/grade.log" 2>&1) ||
                ! python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if s["percent"] < 50 else 1)' \
                    "$workspace/grade.json"; then
                tail -30 "$scratch/grade.log"
                echo "FAIL: the handout's '$cmd' gives no score sheet, or half marks to a skeleton" >&2
                bad=$((bad + 1))
            fi ;;
        *)
            echo "FAIL: lab_test does not know how to run the handout's command '$cmd'" >&2
            bad=$((bad + 1)) ;;
        esac
    done < <(awk '/^```sh/{on=1; next} /^```/{on=0} on' "$handout")
    return $bad
}

# The handout names every target that grades the lab, and no file the
# workspace lacks.
check_handout_text() {
    local stage=$1 handout=$workspace/LAB.md bad=0 target path targets
    targets=$(lab_bazel query --noshow_progress "tests(//$stage:all)" 2>/dev/null | sed 's/.*://')
    for target in $targets; do
        if ! grep -q "\`$target\`\|$stage:$target" "$handout"; then
            echo "FAIL: LAB.md of $stage never names the test target $target" >&2
            bad=$((bad + 1))
        fi
    done
    # And back: each test its tables name is one //STAGE:all runs (a
    # subpackage's tests, such as stage 4's checks/, come in by a test_suite).
    for target in $(grep -o '^| `[^|]*|' "$handout" | grep -o '`[a-z0-9_]*_test`' | tr -d '`' | sort -u); do
        if ! grep -qx "$target" <<<"$targets"; then
            echo "FAIL: LAB.md of $stage names $target, which bazel test //$stage:all does not run" >&2
            bad=$((bad + 1))
        fi
    done
    # Every code name in backticks is in the workspace, or declared not to be.
    if ! python3 "$repo/tools/labs/handout_check.py" "$workspace" >&2; then
        echo "FAIL: LAB.md of $stage names what its workspace lacks (tools/labs/handout_check.py)" >&2
        bad=$((bad + 1))
    fi
    for path in $(grep -o '`[A-Za-z0-9_./-]*/[A-Za-z0-9_.-]*`' "$handout" | tr -d '`' | sort -u); do
        case "$path" in
        bazel-bin/* | docs/labs/instructors.md | //* | lab[0-9]*) continue ;;  # built, generated, or said to be elsewhere
        esac
        if [ ! -e "$workspace/$path" ]; then
            echo "FAIL: LAB.md of $stage points to $path, which the workspace lacks" >&2
            bad=$((bad + 1))
        fi
    done
    return $bad
}

# The mutants of the rules that only a dedicated test checks.
rule_mutants_of() {
    case $1 in
    stage2_centralcache) echo refill_keeps_returned; echo scavenge_keeps_ran_dry; echo span_race_is_enomem ;;
    stage3_pagecache) echo page_map_relaxed_publish; echo give_back_under_lock ;;
    stage4_reclaim) echo busy_thread_stolen_from ;;
    esac
}

failures=0
for stage in "${stages[@]}"; do
    stage_start=$SECONDS
    echo "== lab_test: $stage, reference copy"
    mkdir -p "$workspace"
    "$repo/tools/labs/make_lab.py" --reference --force "$stage" "$workspace" >/dev/null
    # The stage's own tests plus the shared conformance test: the rest of the
    # shared suite (stress, checker, fuzz and fault flavours), the flavour
    # rules of the stage's own BUILD (_tsan, _valgrind, debug_test) and the
    # drop-in's real-program and fork loops already run in the main tree, and
    # here would only add minutes (and googletest builds per flavour).
    mapfile -t plain < <( (lab_bazel query --noshow_progress \
                              "tests(//$stage:all) except attr(generator_function, hc_stage_tests, //$stage:all)" \
                              2>/dev/null; echo "//$stage:conformance_test") |
                         grep -vE '(_tsan|_valgrind|_asan|:debug_test|:dropin_[a-z_]+|:fork_test)$')
    if ! contains "//$stage:conformance_test" "${plain[@]}"; then
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
        # The rules a handout states that only a dedicated test sees (the
        # publication order, the lock order, idle-only stealing): each
        # broken on purpose in this built copy must fail its test (a few
        # seconds each: one file recompiled, one test run).
        mapfile -t rule_mutants < <(rule_mutants_of "$stage")
        if [ ${#rule_mutants[@]} -gt 0 ]; then
            if "$repo/tools/labs/mutants.py" --in "$workspace" --output-base "$output_base" \
                    "${rule_mutants[@]}" >"$scratch/mutants.log" 2>&1; then
                echo "ok: the rule tests kill ${rule_mutants[*]}"
            else
                cat "$scratch/mutants.log"
                echo "FAIL: a rule mutant of $stage survives, or is stale (tools/labs/mutants.py)" >&2
                failures=$((failures + 1))
            fi
        fi
    else
        cat "$scratch/reference.log"
        echo "FAIL: the reference copy of $stage does not pass: the lab workspace is incomplete" >&2
        failures=$((failures + 1))
        continue
    fi

    echo "== lab_test: $stage, skeleton"
    "$repo/tools/labs/make_lab.py" --force "$stage" "$workspace"
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
        echo "ok: the $stage skeleton builds and fails its tests (bazel exit 3)"
    else
        cat "$scratch/skeleton.log"
        echo "FAIL: the $stage skeleton should build and fail its tests: bazel exit $rc, want 3" >&2
        failures=$((failures + 1))
    fi

    echo "== lab_test: $stage, the handout"
    rc=0
    check_handout_text "$stage" || rc=$?
    run_handout_commands "$stage" || rc=$((rc + $?))
    if [ $rc -eq 0 ]; then
        echo "ok: the $stage handout names every target, only files the workspace has, and its commands run (stage took $((SECONDS - stage_start))s)"
    else
        failures=$((failures + rc))
    fi
    # The next stage's workspace shares no output with this one (what it
    # shares, googletest, comes from the disk cache): its outputs go, so
    # the scratch output base holds one stage at a time, not four.
    lab_bazel clean >/dev/null 2>&1 || true
done

# The grader ranks a correct, a leaky and a half-done lab 2, graded as a
# class (one invocation, one warm output base: the later hand-ins cost only
# their own compiles and test runs).
if [ "$grader" != 0 ] && contains stage2_centralcache "${stages[@]}"; then
    grade_start=$SECONDS
    echo "== lab_test: the grader on three hand-ins of lab 2, as a class"
    lab_bazel shutdown >/dev/null 2>&1 || true
    handins=$scratch/handins
    "$repo/tools/labs/class_handins.py" stage2_centralcache "$handins" \
        --only reference,fetch_drops_span_rest,half_done >/dev/null
    "$repo/tools/labs/grade.py" stage2_centralcache --handin-list >"$scratch/handin_list.txt"
    if ! "$repo/tools/labs/grade.py" stage2_centralcache --handin "$handins" --quick --reps 3 \
            --scratch "$scratch/grading" --out "$scratch/grades" >"$scratch/class.log" 2>&1; then
        tail -30 "$scratch/class.log"
        echo "FAIL: tools/labs/grade.py on the class of lab 2" >&2
        failures=$((failures + 1))
    fi
    if python3 - "$scratch/grades" <<'EOF'
import csv, json, sys
d = sys.argv[1]
s = {h: json.load(open(f"{d}/{h}.json")) for h in ("reference", "fetch_drops_span_rest", "half_done")}
for h, sheet in s.items():
    print(f"  {h:22} {sheet['total']:6.2f} / {sheet['out_of']}  space index "
          f"{sheet['performance']['space_index']}  ({sheet['seconds']:.0f} s)")
rows = list(csv.DictReader(open(f"{d}/class.csv")))
assert sorted(r["handin"] for r in rows) == sorted(s), rows
ref, leaky, half = s["reference"], s["fetch_drops_span_rest"], s["half_done"]
# Throughput is measured on a shared machine: the reference against the
# shipped yardsticks may lose a few points there, never a test.
tests_full = all(got == out_of for c, (got, out_of) in ref["categories"].items() if c != "performance")
conformance = lambda sheet: next(g for g in sheet["groups"] if g["target"].endswith(":conformance_test"))
ok = (tests_full and ref["total"] >= 0.9 * ref["out_of"]
      and leaky["performance"]["space_index"] < 0.8 * ref["performance"]["space_index"]
      and conformance(leaky)["points"] < conformance(ref)["points"]  # the group that names the leak
      and any(".cc:" in f for f in conformance(leaky)["failures"])  # the assertion, quoted
      and ref["total"] > leaky["total"] > half["total"])
sys.exit(0 if ok else 1)
EOF
    then
        echo "ok: the grader ranks reference > leaky > half-done ($((SECONDS - grade_start))s)"
    else
        cat "$scratch/grades"/*.txt
        echo "FAIL: the grader does not separate a correct, a leaky and a half-done lab 2" >&2
        failures=$((failures + 1))
    fi
fi

if [ $failures -ne 0 ]; then
    echo "lab_test: $failures stage(s) failed" >&2
    exit 1
fi
echo "lab_test: every lab (${stages[*]}) builds, fails its tests, and its reference passes (${SECONDS}s)"
