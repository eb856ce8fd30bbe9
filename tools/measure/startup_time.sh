#!/bin/bash
# tools/measure/startup_time.sh [-n RUNS] [-p PROGRAM] NAME=LIBRARY... — what a
# preloaded allocator costs every process start: RUNS runs of PROGRAM
# (default 200 of /bin/true) under each LD_PRELOAD, interleaved in rounds of
# ten so that the machine's noise falls on every column alike, and the mean
# wall time of one run. NAME=none runs with no preload. docs/dropin.md,
# section 1, quotes what it printed.
#   tools/measure/startup_time.sh none=none hcmalloc=bazel-bin/stage4_reclaim/libhcmalloc.so \
#       mimalloc=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2
set -euo pipefail
runs=200
program=/bin/true
while getopts n:p: opt; do
    case $opt in
        n) runs=$OPTARG ;;
        p) program=$OPTARG ;;
        *) echo "usage: $0 [-n RUNS] [-p PROGRAM] NAME=LIBRARY..." >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { echo "usage: $0 [-n RUNS] [-p PROGRAM] NAME=LIBRARY..." >&2; exit 2; }
names=() libs=()
declare -A total_us
for spec in "$@"; do
    name=${spec%%=*} lib=${spec#*=}
    if [ "$lib" != none ] && [ ! -r "$lib" ]; then echo "$0: no library $lib" >&2; exit 2; fi
    names+=("$name") libs+=("$lib") total_us[$name]=0
done
now_us() { local t=${EPOCHREALTIME/./}; echo "$t"; }
round=10
for ((done_runs = 0; done_runs < runs; done_runs += round)); do
    for i in "${!names[@]}"; do
        lib=${libs[$i]}
        start=$(now_us)
        if [ "$lib" = none ]; then
            for ((r = 0; r < round; r++)); do "$program"; done
        else
            for ((r = 0; r < round; r++)); do LD_PRELOAD=$lib "$program"; done
        fi
        end=$(now_us)
        total_us[${names[$i]}]=$((total_us[${names[$i]}] + end - start))
    done
done
base=${total_us[${names[0]}]}
printf '%-12s %10s %10s\n' preload 'ms a run' "vs ${names[0]}"
for name in "${names[@]}"; do
    t=${total_us[$name]}
    printf '%-12s %10s %9s%%\n' "$name" \
        "$(awk -v t="$t" -v n="$runs" 'BEGIN { printf "%.3f", t / n / 1000 }')" \
        "$(awk -v t="$t" -v b="$base" 'BEGIN { printf "%+.1f", (t - b) * 100 / b }')"
done
