#!/bin/bash
# bench/bench_smoke_test.sh — CI's run of the bench: `--full --quick` over
# every workload and every allocator found. Checks the shape of what it
# prints and writes (a table row per allocator and thread count, the CSV
# header, the chart), that no options means the tour, that a peer's crash
# is reported and leaves the exit status at 0, and how it treats a bad
# option; never a speed.
# usage: bench_smoke_test.sh PATH_TO_BENCH PATH_TO_CRASHING_MALLOC_SO
set -euo pipefail
bench="$1"
crashing_malloc="$2"
out="${TEST_TMPDIR:-$(mktemp -d)}/bench-smoke"
log="$out.stdout"
err="$out.stderr"
threads="1,4"
fail() { echo "FAIL: $*" >&2; exit 1; }

status=0
"$bench" --full --quick --threads "$threads" --out "$out" >"$log" 2>"$err" || status=$?
if [ "$status" -ne 0 ]; then
    cat "$err" >&2
    fail "bench --full --quick exited with status $status"
fi
cat "$log"

# The allocators it found, in the order it ran them.
allocators=$(sed -n 's/^bench: allocators: //p' "$err")
[ -n "$allocators" ] || fail "no 'bench: allocators:' line on stderr"
for expected in glibc stage1_threadcache; do
    grep -qw "$expected" <<<"$allocators" || fail "$expected was not run (found: $allocators)"
done
for peer in tcmalloc:libtcmalloc_minimal.so.4 jemalloc:libjemalloc.so.2 mimalloc:libmimalloc.so.2; do
    if ls /usr/lib/*/"${peer#*:}" >/dev/null 2>&1; then
        grep -qw "${peer%%:*}" <<<"$allocators" || fail "${peer%%:*} is installed but was not run"
    fi
done

# The workloads: the driver's one list, as bench.py reads it.
workloads=$("$bench" --list-workloads)
[ "$(wc -l <<<"$workloads")" -ge 5 ] && grep -qx tight <<<"$workloads" || fail "--list-workloads: '$workloads'"
# A table per workload, a row in it per allocator and thread count (or a
# row saying why the allocator cannot run it: stages 1-2 have no realloc).
for workload in $workloads; do
    table=$(awk -v w="== $workload:" 'index($0, w) == 1 {on = 1; next} /^== / {on = 0} on' "$log")
    [ -n "$table" ] || fail "no table for $workload"
    for a in $allocators; do
        # A peer may fail a run (jemalloc 5.3 crashes in latethreads now and
        # then): its row then says why, and the bench still exits 0.
        row='[0-9.]+\*? +[0-9.]+ +[0-9,]+|skipped: '
        case $a in tcmalloc | jemalloc | mimalloc) row="$row|FAILED: " ;; esac
        for t in ${threads//,/ }; do
            grep -Eq "^ *$t +$a +($row)" <<<"$table" \
                || fail "$workload: no row for $a with $t threads"
        done
    done
done

# Like for like first: in every table the malloc/free rows (glibc, the
# drop-in, the peers) come before the stages' own rows, which sit under
# their "sized API, linked in" label.
for workload in tight xthread; do
    table=$(awk -v w="== $workload:" 'index($0, w) == 1 {on = 1; next} /^== / {on = 0} on' "$log")
    first_title=$(grep -n -- '-- malloc/free, the same call path' <<<"$table" | cut -d: -f1)
    sized_title=$(grep -n -- '-- the stages, sized API' <<<"$table" | cut -d: -f1)
    [ -n "$first_title" ] && [ -n "$sized_title" ] || fail "$workload: the two row groups are not labelled"
    glibc_row=$(grep -nE '^ *[0-9]+ +glibc ' <<<"$table" | head -n 1 | cut -d: -f1)
    stage_row=$(grep -nE '^ *[0-9]+ +stage1_threadcache ' <<<"$table" | head -n 1 | cut -d: -f1)
    [ "$first_title" -lt "$glibc_row" ] && [ "$glibc_row" -lt "$sized_title" ] && [ "$sized_title" -lt "$stage_row" ] \
        || fail "$workload: the headline rows do not come first, or a stage is not under the sized label"
    if grep -qw stage4_dropin <<<"$allocators"; then
        dropin_row=$(grep -nE '^ *[0-9]+ +stage4_dropin ' <<<"$table" | head -n 1 | cut -d: -f1)
        [ "$dropin_row" -lt "$sized_title" ] || fail "$workload: the drop-in is not among the headline rows"
    fi
done
grep -q '>sized API, linked in:</text>' "$out/chart.svg" || fail "chart.svg does not label the stages' rows"
# The chart draws (and its legend lists) the allocators in run order.
legend_dropin=$(grep -n '>stage4_dropin</text>' "$out/chart.svg" | head -n 1 | cut -d: -f1)
legend_stage=$(grep -n '>stage1_threadcache</text>' "$out/chart.svg" | head -n 1 | cut -d: -f1)
[ "$legend_dropin" -lt "$legend_stage" ] || fail "chart.svg shows the stages before the like-for-like allocators"

header=$(head -n 1 "$out/results.csv")
[ "$header" = "workload,allocator,threads,ns_per_pair,ratio_to_glibc,peak_rss_kib,reps,failure" ] \
    || fail "results.csv header is '$header'"
n_alloc=$(wc -w <<<"$allocators")
n_workloads=$(grep -c '^== ' "$log")
n_skipped=$(grep -c ' skipped: ' "$log" || true)
rows=$(($(wc -l <"$out/results.csv") - 1))
expected_rows=$((n_workloads * 2 * n_alloc - n_skipped))
[ "$rows" -eq "$expected_rows" ] || fail "results.csv has $rows rows, expected $expected_rows"
grep -q '^tight,glibc,1,[0-9.]*,1.0000,[0-9]*,1,$' "$out/results.csv" || fail "glibc's own ratio is not 1"
# The tree the figures are of, for publish.py: a commit, or why there is none
# (this test runs outside the workspace's git checkout).
grep -Eqx '[0-9a-f]{7,}( \+ changes)?|not a git checkout' "$out/tree.txt" \
    || fail "tree.txt does not name the tree: $(cat "$out/tree.txt" 2>/dev/null)"

grep -q '^<svg ' "$out/chart.svg" || fail "chart.svg does not start an <svg>"
grep -q '</svg>$' "$out/chart.svg" || fail "chart.svg is not closed"
for a in $allocators; do
    grep -q ">$a</text>" "$out/chart.svg" || fail "chart.svg has no legend entry for $a"
done

# No options: the tour, a few workloads at 1 thread and the cores, ending
# with where the files are and how to run the whole matrix.
tour="$out/tour"
"$bench" --quick --allocators glibc,stage1_threadcache --out "$tour" >"$tour.stdout" 2>"$tour.stderr" \
    || fail "the tour exited with status $?"
tour_workloads=$(sed -n 's/^bench: the tour: workloads \([^ ]*\), .*/\1/p' "$tour.stderr" | tr , ' ')
[ -n "$tour_workloads" ] || fail "the tour does not say which workloads it runs"
[ "$(wc -w <<<"$tour_workloads")" -lt "$(wc -w <<<"$workloads")" ] || fail "the tour runs every workload"
[ "$(grep '^== ' "$tour.stdout" | sed 's/^== \([a-z]*\):.*/\1/' | tr '\n' ' ')" = "$tour_workloads " ] \
    || fail "the tour's tables are not its workloads ($tour_workloads)"
grep -q "wrote results.md, results.csv, chart.svg to $tour" "$tour.stderr" || fail "the tour does not say where its files are"
grep -q -- "--full" "$tour.stderr" || fail "the tour does not say how to run the whole matrix"
grep -qE '^\[[0-9]+/[0-9]+ +[0-9]+%, about [0-9ms]+ left\] ' "$tour.stderr" || fail "no progress line with the time left"

# A peer that crashes: reported in the table and results.csv with its
# reason; the exit status stays 0.
crash="$out/crash"
CRASHING_MALLOC_WORKLOAD=tight "$bench" --quick --threads 1 --workloads tight,mixed \
    --allocators glibc,crashing,stage1_threadcache --peer "crashing=$crashing_malloc" --out "$crash" \
    >"$crash.stdout" 2>"$crash.stderr" || { cat "$crash.stderr" >&2; fail "a peer's crash changed the exit status"; }
grep -qE '^ +1 +crashing +FAILED: crashed \(SIGSEGV\)' "$crash.stdout" || fail "the table does not report the crash"
grep -qE '^ +1 +crashing +[0-9.]+ ' "$crash.stdout" || fail "the crashing peer's other workload (mixed) did not run"
grep -q '^tight,crashing,1,,,,0,crashed (SIGSEGV) in run 1 of 1$' "$crash/results.csv" \
    || fail "results.csv does not report the crash: $(grep crashing "$crash/results.csv")"
grep -q 'failed, no bar: crashing, 1 thread: crashed (SIGSEGV)' "$crash/chart.svg" || fail "chart.svg does not name the crash"

# --latency (bench/latency.c, every malloc timed): a row of five figures for
# glibc and the drop-in in latency.csv, the table on stdout.
latency="$(dirname "$out")/latency"
"$bench" --latency --quick --allocators glibc,stage4_dropin --out "$latency" >"$latency.stdout" 2>"$latency.stderr" \
    || { cat "$latency.stderr" >&2; fail "--latency failed"; }
head -1 "$latency/latency.csv" | grep -qx 'allocator,ns_p50,ns_p99,ns_p99_9,ns_p99_99,ns_max' \
    || fail "latency.csv's header: $(head -1 "$latency/latency.csv")"
for a in glibc stage4_dropin; do
    grep -qE "^$a(,[0-9]+){5}\$" "$latency/latency.csv" || fail "latency.csv has no row for $a"
done
grep -q '^== latency: ns per malloc' "$latency.stdout" || fail "--latency printed no table"

# Bad options: one line on stderr, exit status 2.
for bad in "--threads 17" "--workloads nosuch" "--allocators nosuch" "--reps 0" "--no-such-option" \
    "--full --workloads tight" "--peer nosuch"; do
    set +e
    "$bench" $bad --out "$out" >/dev/null 2>"$err"
    status=$?
    set -e
    [ "$status" -eq 2 ] || fail "'$bad' exited with $status, not 2"
    [ "$(wc -l <"$err")" -eq 1 ] || fail "'$bad' printed more than one line: $(cat "$err")"
done
echo "PASS: bench smoke run, $n_alloc allocators: $allocators"
