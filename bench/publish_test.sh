#!/bin/bash
# bench/publish_test.sh — bench/publish.py rewrites only the results
# section of docs/benchmarks.md, and leaves the chapter as it was when it
# cannot (a results folder that is not a recorded run, a mistyped option).
# Run on a copy: a chapter with a section and text on both sides.
# usage (Bazel passes it): publish_test.sh PUBLISH_PY
set -euo pipefail
publish=$(realpath "$1")
work=${TEST_TMPDIR:-$(mktemp -d)}/tree
rm -rf "$work"
mkdir -p "$work/docs" "$work/run"
cd "$work"
begin=$(sed -n 's/^BEGIN = "\(.*\)"$/\1/p' "$publish")
end=$(sed -n 's/^END = "\(.*\)"$/\1/p' "$publish")
printf 'before the section\n%s\nold figures\n%s\nafter the section\n' "$begin" "$end" >docs/benchmarks.md
cp docs/benchmarks.md original.md

fail() { echo "publish_test: $*" >&2; exit 1; }

for args in "--help" "missing-folder" "run extra-argument"; do
    python3 "$publish" $args >/dev/null 2>&1 || true
    cmp -s docs/benchmarks.md original.md || fail "\`publish.py $args\` changed the chapter"
done
python3 "$publish" run 2>/dev/null && fail "a folder with no recorded run was published"
cmp -s docs/benchmarks.md original.md || fail "a failed publish changed the chapter"

echo "bench --tour" >run/command.txt
echo "machine: test machine" >run/machine.txt
echo "allocator,ns" >run/results.csv
printf '| allocator | ns |\n|---|---|\n| new figures | 1 |\n' >run/results.md
echo "<svg/>" >run/chart.svg
python3 "$publish" run
grep -q "new figures" docs/benchmarks.md || fail "the run's tables were not written"
grep -q "UTC with" docs/benchmarks.md || fail "a run that names no tree (an older one) was not published as one"
echo "abc1234 + changes" >run/tree.txt
python3 "$publish" run
grep -q "UTC, tree abc1234 + changes, with" docs/benchmarks.md || fail "the tree the run measured was not named"
grep -q "old figures" docs/benchmarks.md && fail "the old section was kept"
head -n 1 docs/benchmarks.md | grep -qx "before the section" || fail "the text before the section changed"
tail -n 1 docs/benchmarks.md | grep -qx "after the section" || fail "the text after the section changed"
cmp -s run/chart.svg docs/benchmarks-chart.svg || fail "the chart was not copied"
echo "publish_test: ok"
