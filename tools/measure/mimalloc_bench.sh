#!/bin/bash
# tools/measure/mimalloc_bench.sh CHECKOUT [--rounds N] [--allocators LIST] [--programs LIST]
# — mimalloc-bench's benchmark programs (github.com/daanx/mimalloc-bench,
# MIT licence; not copied here: CHECKOUT is a clone of that repository)
# under glibc, tcmalloc, jemalloc, mimalloc and hcmalloc's drop-in, the
# table in docs/benchmarks.md ("mimalloc-bench's programs").
#
# Builds the programs as its CMakeLists.txt does (its sources, flags and
# defines; gcc -O2, as the compared figures were made, where its Release
# build would use -O3), runs each under every allocator by LD_PRELOAD
# (glibc: none), interleaved, the order rotated every round, and records
# the time and the peak RSS (GNU time's %M). The time is the program's
# own measure where it runs for a fixed time and prints a rate, as
# mimalloc-bench's bench.sh reads it (larson, rptest, xmalloc-test,
# glibc-thread: its "relative time"), else the wall time. Prints a line a
# run, then the medians over the rounds as ratios to glibc's, with the
# geometric mean of each allocator's ratios.
#
# Arguments are the compared table's where it gives them (xmalloc-test, rptest,
# mstress), else bench.sh's with $procs = the cores here, shortened where
# noted so that a round of everything takes about 3 minutes on 2 cores.
#   --rounds N         rounds, default 3 (the median of them is reported)
#   --allocators LIST  comma-separated from glibc,tcmalloc,jemalloc,mimalloc,
#                      dropin, hardened (the hardened drop-in; default: glibc
#                      and every one found but hardened)
#   --programs LIST    comma-separated run names (default: all; see below)
# The drop-in is stage 4's libhcmalloc.so (hardened: libhcmalloc_hardened.so),
# built here with --config=opt (and --disk_cache=$HC_BAZEL_DISK_CACHE when
# that is set). HC_BENCH_PEERS="NAME=LIB,..." adds libraries of no package
# (GrapheneOS's hardened_malloc built by its Makefile, Scudo's standalone
# library from libclang-rt-14-dev) as more allocators, after the others.
set -euo pipefail
cd "$(dirname "$0")/../.."

usage() {
    echo "usage: tools/measure/mimalloc_bench.sh MIMALLOC_BENCH_CHECKOUT [--rounds N] [--allocators LIST]" \
        "[--programs LIST]" >&2
    exit 2
}
[ $# -ge 1 ] || usage
checkout=$1
shift
rounds=3
allocators=
programs=
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) [ $# -ge 2 ] || usage; rounds=$2; shift 2 ;;
    --allocators) [ $# -ge 2 ] || usage; allocators=$2; shift 2 ;;
    --programs) [ $# -ge 2 ] || usage; programs=$2; shift 2 ;;
    *) usage ;;
    esac
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "mimalloc_bench: --rounds must be a positive number" >&2; exit 2; }
src=$checkout/bench
[ -f "$src/CMakeLists.txt" ] && [ -d "$src/larson" ] \
    || { echo "mimalloc_bench: $checkout is not a mimalloc-bench checkout (no bench/larson)" >&2; exit 2; }

# ---- The allocators: the Debian libraries bench/bench.py finds, and the drop-in.
declare -A lib
lib[glibc]=
for peer in tcmalloc:libtcmalloc_minimal.so.4 jemalloc:libjemalloc.so.2 mimalloc:libmimalloc.so.2; do
    for dir in /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /lib/x86_64-linux-gnu /usr/lib64 /usr/lib; do
        if [ -f "$dir/${peer#*:}" ]; then
            lib[${peer%%:*}]=$dir/${peer#*:}
            break
        fi
    done
done
found="glibc tcmalloc jemalloc mimalloc dropin"
wanted=${allocators//,/ }
[ -n "$wanted" ] || wanted=$found
found="$found hardened"
names=()
for a in $wanted; do
    case " $found " in *" $a "*) ;; *) echo "mimalloc_bench: no allocator '$a' (known: $found)" >&2; exit 2 ;; esac
    if [ "$a" != glibc ] && [ "$a" != dropin ] && [ "$a" != hardened ] && [ -z "${lib[$a]:-}" ]; then
        [ -n "$allocators" ] && { echo "mimalloc_bench: $a is not installed (tools/setup.sh)" >&2; exit 2; }
        continue
    fi
    names+=("$a")
done
for peer in ${HC_BENCH_PEERS:+${HC_BENCH_PEERS//,/ }}; do
    [[ $peer == *=* && -f ${peer#*=} ]] || { echo "mimalloc_bench: HC_BENCH_PEERS: no library in '$peer'" >&2; exit 2; }
    lib[${peer%%=*}]=$(cd "$(dirname "${peer#*=}")" && pwd)/$(basename "${peer#*=}")
    names+=("${peer%%=*}")
done
case " ${names[*]} " in *" glibc "*) ;; *) echo "mimalloc_bench: the ratios need glibc in --allocators" >&2; exit 2 ;; esac
if case " ${names[*]} " in *" dropin "*) true ;; *) false ;; esac; then
    bazel build ${HC_BAZEL_DISK_CACHE:+--disk_cache=$HC_BAZEL_DISK_CACHE} --config=opt \
        //stage4_reclaim:libhcmalloc.so >&2
    lib[dropin]=$PWD/bazel-out/k8-opt/bin/stage4_reclaim/libhcmalloc.so
fi
if case " ${names[*]} " in *" hardened "*) true ;; *) false ;; esac; then
    bazel build ${HC_BAZEL_DISK_CACHE:+--disk_cache=$HC_BAZEL_DISK_CACHE} --config=opt \
        //stage4_reclaim:libhcmalloc_hardened.so >&2
    lib[hardened]=$PWD/bazel-out/k8-opt/bin/stage4_reclaim/libhcmalloc_hardened.so
fi

# ---- Building, as bench/CMakeLists.txt does.
[ -x /usr/bin/time ] || { echo "mimalloc_bench: needs GNU time (apt-get install time)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cflags=(-O2 -DNDEBUG -w)
build() { # NAME COMPILER [FLAGS...] SOURCES... (relative to bench/)
    local name=$1 cc=$2
    shift 2
    local args=()
    for a in "$@"; do
        case $a in -*) args+=("$a") ;; *) args+=("$src/$a") ;; esac
    done
    if ! "$cc" "${cflags[@]}" "${args[@]}" -o "$work/$name" -lpthread -lm 2>"$work/$name.log"; then
        echo "mimalloc_bench: $name does not build: $(head -n 3 "$work/$name.log" | tr '\n' ' ')" >&2
        return 0
    fi
}
cfrac=(cfrac pops pconst pio pabs pneg pcmp podd phalf padd psub pmul pdivmod psqrt ppowmod atop ptoa
       itop utop ptou errorp pfloat pidiv pimod picmp primes pcfrac pgcd)
espresso=(cofactor cols compl contain cubestr cvrin cvrm cvrmisc cvrout dominate equiv espresso essen exact
          expand gasp getopt gimpel globals hack indep irred main map matrix mincov opo pair part primes
          reduce rows set setc sharp sminterf solution sparse unate utility verify)
build cfrac gcc -std=gnu89 -DNOMEMOPT=1 $(printf 'cfrac/%s.c ' "${cfrac[@]}")
build espresso gcc -std=gnu89 $(printf 'espresso/%s.c ' "${espresso[@]}")
build barnes gcc -std=gnu89 $(printf 'barnes/%s.c ' code code_io load grav getparam util)
build larson g++ -std=c++17 -DCPP=1 larson/larson.cpp
build larson-sized g++ -std=c++17 -fsized-deallocation -DCPP=1 -DSIZED=1 larson/larson.cpp
build alloc-test g++ -std=c++17 -DBENCH=4 alloc-test/test_common.cpp alloc-test/allocator_tester.cpp
build cache-scratch g++ -std=c++17 cache-scratch/cache-scratch.cpp
build cache-thrash g++ -std=c++17 cache-thrash/cache-thrash.cpp
build xmalloc-test gcc xmalloc-test/xmalloc-test.c
build malloc-large g++ -std=c++17 malloc-large/malloc-large.cpp
build mstress gcc mstress/mstress.c
build mleak gcc mleak/mleak.c
build rptest gcc -I"$src/rptest" rptest/rptest.c rptest/thread.c rptest/timer.c
build glibc-simple gcc glibc-bench/bench-malloc-simple.c
build glibc-thread gcc glibc-bench/bench-malloc-thread.c

# ---- The runs: NAME|PROGRAM ARGS|METRIC (time: wall time; else how the
# program's output gives its time, as bench.sh reads it).
procs=$(nproc)
runs=(
    "cfrac|cfrac 17545186520507317056371138836327483792789528|time"
    "espresso|espresso $src/espresso/largest.espresso|time"
    "barnes|barnes <$src/barnes/input|time"
    # bench.sh: 5 s; the rate, hence the relative time, does not depend on it.
    "larsonN|larson 2 8 1000 5000 100 4141 $procs|larson"
    "larsonN-sized|larson-sized 2 8 1000 5000 100 4141 $procs|larson"
    "mstressN|mstress $procs 100 300|time"
    "rptestN|rptest $procs 0 1 2 500 1000 100 8 16000|rptest"
    "xmalloc-testN|xmalloc-test -w $procs -t 3 -s 64|xmalloc"
    # bench.sh: 2,000,000 repetitions.
    "cache-thrash1|cache-thrash 1 1000 1 1000000 $procs|time"
    "cache-thrashN|cache-thrash $procs 1000 1 1000000 $procs|time"
    "cache-scratch1|cache-scratch 1 1000 1 1000000 $procs|time"
    "cache-scratchN|cache-scratch $procs 1000 1 1000000 $procs|time"
    "glibc-simple|glibc-simple|time"
    "glibc-thread|glibc-thread $procs|glibc-thread"
    "alloc-test1|alloc-test 1|time"
    "alloc-testN|alloc-test $procs|time"
    "malloc-large|malloc-large|time"
    "mleak10|mleak 5|time"
    "mleak100|mleak 25|time" # bench.sh: 50
)
selected=()
for r in "${runs[@]}"; do
    IFS='|' read -r name command _ <<<"$r"
    program=${command%% *}
    if [ -n "$programs" ]; then
        case ",$programs," in *",$name,"*) ;; *) continue ;; esac
    fi
    if [ ! -x "$work/$program" ]; then
        echo "mimalloc_bench: $name left out: $program did not build" >&2
        continue
    fi
    selected+=("$r")
done
[ ${#selected[@]} -gt 0 ] || { echo "mimalloc_bench: no program to run (--programs '$programs')" >&2; exit 2; }

# The program's own time, from its output (bench.sh's "fixup" of each).
own_time() { # METRIC OUTPUT_FILE WALL_SECONDS
    case $1 in
    time) echo "$3" ;;
    larson) sed -n 's/.*relative time: \([0-9.]*\)s.*/\1/p' "$2" | tail -n 1 ;;
    xmalloc) sed -n 's/^rtime: \([0-9.]*\),.*/\1/p' "$2" | tail -n 1 ;;
    rptest)
        ops=$(sed -n 's/.*\.\.\.\([0-9]*\) memory ops.*/\1/p' "$2" | tail -n 1)
        [ -n "$ops" ] && awk -v ops="$ops" 'BEGIN { printf "%.4f\n", 2000000 / ops }' ;;
    glibc-thread)
        ops=$(sed -n 's/^\([0-9.]*\) iterations.*/\1/p' "$2" | tail -n 1)
        [ -n "$ops" ] && awk -v ops="$ops" 'BEGIN { printf "%.4f\n", 1000000000 / ops }' ;;
    esac
}

results=$work/results.tsv
: >"$results"
echo "mimalloc_bench: ${#selected[@]} programs x ${#names[@]} allocators (${names[*]}), $rounds rounds, $procs cores" >&2
for ((round = 0; round < rounds; round++)); do
    shift_by=$((round % ${#names[@]}))
    order=("${names[@]:shift_by}" "${names[@]:0:shift_by}")
    for r in "${selected[@]}"; do
        IFS='|' read -r name command metric <<<"$r"
        input=/dev/null
        if [[ $command == *"<"* ]]; then
            input=${command#*<}
            command=${command%%<*}
        fi
        read -r -a argv <<<"$command"
        for a in "${order[@]}"; do
            out=$work/out
            env=()
            [ -n "${lib[$a]}" ] && env=("LD_PRELOAD=${lib[$a]}")
            start=$EPOCHREALTIME
            status=0
            (cd "$work" && timeout 300 /usr/bin/time -f '%M' -o "$work/rss" \
                env "${env[@]}" "./${argv[0]}" "${argv[@]:1}" <"$input" >"$out" 2>&1) || status=$?
            end=$EPOCHREALTIME
            wall=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.4f\n", e - s }')
            t=
            [ $status -eq 0 ] && t=$(own_time "$metric" "$out" "$wall")
            rss=$(grep -E '^[0-9]+$' "$work/rss" | tail -n 1 || true)
            if [ -z "$t" ] || [ -z "$rss" ]; then
                why="exit status $status: $(tail -n 1 "$out" | cut -c1-80)"
                printf '%s\t%s\t%s\tFAILED\t%s\t%s\n' "$round" "$name" "$a" "$why" "$wall" >>"$results"
                echo "round $((round + 1))/$rounds $name $a FAILED: $why" >&2
                continue
            fi
            printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$name" "$a" "$t" "$rss" "$wall" >>"$results"
            echo "round $((round + 1))/$rounds $name $a: ${t} s, ${rss} KiB (wall ${wall} s)" >&2
        done
    done
done

# ---- The table: medians over the rounds, as ratios to glibc's.
python3 - "$results" "$rounds" "${names[@]}" <<'EOF'
import math, statistics, sys
path, rounds, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
times, rss, failed, order, walls = {}, {}, {}, [], {}
for line in open(path):
    rnd, prog, alloc, t, r, wall = line.rstrip("\n").split("\t")
    walls[int(rnd)] = walls.get(int(rnd), 0) + float(wall)
    if prog not in order:
        order.append(prog)
    if t == "FAILED":
        failed[(prog, alloc)] = r
        continue
    times.setdefault((prog, alloc), []).append(float(t))
    rss.setdefault((prog, alloc), []).append(int(r))
ratios = {n: ([], []) for n in names}

def cell(prog, alloc, table, fmt):
    if (prog, alloc) not in table or (prog, "glibc") not in table:
        return "failed"
    mine, base = statistics.median(table[(prog, alloc)]), statistics.median(table[(prog, "glibc")])
    return fmt(mine, base)

print("mimalloc-bench: median of %d rounds; time and peak RSS as x glibc (lower is better)" % rounds)
shown = [n for n in names if n != "glibc"]
print("| program | glibc: s, MiB | " + " | ".join("%s time (RSS)" % n for n in shown) + " |")
print("|---|---|" + "---|" * len(shown))
for prog in order:
    if (prog, "glibc") in times:
        base_t = statistics.median(times[(prog, "glibc")])
        base_r = statistics.median(rss[(prog, "glibc")])
        row = ["%.3f, %.1f" % (base_t, base_r / 1024)]
    else:
        base_t = None
        row = ["failed"]
    for n in shown:
        if base_t is None or (prog, n) not in times:
            row.append("failed" if (prog, n) in failed or base_t is None else "-")
            continue
        tr = statistics.median(times[(prog, n)]) / base_t
        rr = statistics.median(rss[(prog, n)]) / base_r
        ratios[n][0].append(tr)
        ratios[n][1].append(rr)
        row.append("%.2f (%.2f)" % (tr, rr))
    print("| %s | %s |" % (prog, " | ".join(row)))
geo = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")
print("| geometric mean | 1 (1) | " + " | ".join(
    "%.2f (%.2f)" % (geo(ratios[n][0]), geo(ratios[n][1])) for n in shown) + " |")
print("(the time: the program's own for larson, rptest, xmalloc-test, glibc-thread, else wall; "
      "glibc's column: its median time in s, peak RSS in MiB; a round took %s s)"
      % ", ".join("%.0f" % walls[r] for r in sorted(walls)))
for (prog, alloc), why in sorted(failed.items()):
    print("failed: %s under %s: %s" % (prog, alloc, why))
EOF
