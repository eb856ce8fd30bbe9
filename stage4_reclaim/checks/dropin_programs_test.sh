#!/bin/bash
# stage4_reclaim/checks/dropin_programs_test.sh LIB — real programs, with and
# without LD_PRELOAD=LIB, must print the same thing; with it,
# HCMALLOC_STATS=1 must produce hcmalloc's report, proving the library
# really served them. Programs: python3 (threads building and dropping big
# dicts and lists), sort of a 50 MB file, bash spawning subshells,
# gzip/gunzip, sqlite3.
set -u
lib="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
work="${TEST_TMPDIR:-$(mktemp -d)}"
failures=0

# run [--no-report] NAME COMMAND...: runs COMMAND twice (stdin from
# $work/NAME.in if it exists) and compares stdout; the preloaded run's
# stderr must hold the report, unless --no-report (a program that closes
# stderr before exit: see mapped_in below).
run() {
    local want_report=1
    if [ "$1" = --no-report ]; then
        want_report=0
        shift
    fi
    local name="$1"
    shift
    local in=/dev/null
    [ -e "$work/$name.in" ] && in="$work/$name.in"
    "$@" <"$in" >"$work/$name.plain" 2>"$work/$name.plain.err"
    local plain_rc=$?
    HCMALLOC_STATS=1 LD_PRELOAD="$lib" "$@" <"$in" >"$work/$name.hc" 2>"$work/$name.hc.err"
    local hc_rc=$?
    local reports
    reports=$(grep -c "^hcmalloc (stage4_reclaim)" "$work/$name.hc.err")
    if [ "$plain_rc" -ne 0 ] || [ "$hc_rc" -ne 0 ]; then
        echo "FAIL $name: exit $plain_rc without, $hc_rc with hcmalloc"
        tail -5 "$work/$name.hc.err"
        failures=$((failures + 1))
    elif ! cmp -s "$work/$name.plain" "$work/$name.hc"; then
        echo "FAIL $name: output differs under hcmalloc"
        diff "$work/$name.plain" "$work/$name.hc" | head -5
        failures=$((failures + 1))
    elif [ "$want_report" -eq 1 ] && [ "$reports" -eq 0 ]; then
        echo "FAIL $name: no hcmalloc report: the library was not used"
        failures=$((failures + 1))
    else
        echo "PASS $name: $(wc -c <"$work/$name.hc") bytes of identical output, $reports hcmalloc report(s)"
    fi
}

# mapped_in NAME COMMAND...: starts COMMAND preloaded, reading a FIFO given
# as its last argument, and while it waits for input checks that
# libhcmalloc.so is in its /proc/PID/maps. For programs (coreutils) whose
# atexit handler closes stderr, so the report at exit cannot be seen.
mapped_in() {
    local name="$1"
    shift
    local fifo="$work/$name.fifo"
    mkfifo "$fifo"
    LD_PRELOAD="$lib" "$@" "$fifo" >/dev/null &
    local pid=$! found=0
    exec 3>"$fifo" # the program is now past exec and its own open() of the FIFO
    for _ in $(seq 1 100); do
        grep -q "libhcmalloc.so" "/proc/$pid/maps" 2>/dev/null && { found=1; break; }
        sleep 0.1
    done
    exec 3>&-
    wait "$pid"
    if [ "$found" -eq 1 ]; then
        echo "PASS $name: libhcmalloc.so is in /proc/$pid/maps"
    else
        echo "FAIL $name: libhcmalloc.so not in /proc/$pid/maps"
        failures=$((failures + 1))
    fi
}

# python3: four threads build and drop large dicts and lists.
cat >"$work/churn.py" <<'PY'
import threading
results = [None] * 4
def work(t):
    total = 0
    for round in range(6):
        d = {i: str(i) * (1 + i % 7) for i in range(60000 + t * 1000)}
        l = [[j] * (j % 13) for j in range(40000)]
        total += sum(len(v) for v in d.values()) + sum(len(x) for x in l)
        del d, l
        b = [bytes(5000 + k) for k in range(300)]  # large blocks
        total += sum(map(len, b))
    results[t] = total
threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
for th in threads: th.start()
for th in threads: th.join()
print(results)
PY
run python3 /usr/bin/python3 "$work/churn.py"

# sort: a 50 MB file, generated the same way every time.
awk 'BEGIN { x = 12345; for (i = 0; i < 2500000; i++) { x = (x * 1103515245 + 12345) % 2147483648; printf "%010d %07d\n", x, i } }' >"$work/sort.in"
run --no-report sort env LC_ALL=C sort
mapped_in sort-maps sort
# gzip and gunzip: compressed bytes identical, and the round trip restores
# the file (its first 10 MB: gzip is the slowest program here).
head -c 10000000 "$work/sort.in" >"$work/gzip.in"
run gzip gzip -n -c
cp "$work/gzip.plain" "$work/gunzip.in"
run gunzip gunzip -c
cmp -s "$work/gunzip.hc" "$work/gzip.in" || { echo "FAIL gunzip: round trip changed the file"; failures=$((failures + 1)); }

# bash: a loop that spawns subshells (each a fork of a process running on hcmalloc).
run bash bash -c 'total=0; for i in $(seq 1 100); do v=$(echo "$i * $i" | (read a op b; echo $((a * b)))); total=$((total + v)); done; echo "$total"; s=""; for i in $(seq 1 2000); do s="$s$i,"; done; echo "${#s}"'

# sqlite3: inserts, an index, and queries.
cat >"$work/sqlite3.in" <<'SQL'
CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, value REAL);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000)
INSERT INTO t(name, value) SELECT printf('name-%d-%s', i % 997, hex(i)), (i * 7919) % 10007 FROM n;
CREATE INDEX t_name ON t(name);
SELECT count(*), sum(value), min(name), max(name) FROM t;
SELECT name, count(*), avg(value) FROM t GROUP BY name ORDER BY 2 DESC, 1 LIMIT 5;
SELECT group_concat(id) FROM (SELECT id FROM t WHERE name LIKE 'name-42-%' ORDER BY value DESC LIMIT 10);
SQL
run sqlite3 sqlite3 ":memory:"

if [ "$failures" -ne 0 ]; then
    echo "dropin_programs_test: $failures failures"
    exit 1
fi
echo "dropin_programs_test: all programs identical under LD_PRELOAD=libhcmalloc.so"
