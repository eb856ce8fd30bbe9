#!/bin/bash
# tools/measure/count_dropin.sh [LIB...] — instructions one malloc(32) + free pair
# (or malloc(HC_COUNT_SIZE) + free) costs through the drop-in libraries
# (the C names, by LD_PRELOAD), counted exactly by callgrind: the same loop
# and the same measure as `bazel run //bench -- --callgrind`
# (bench_driver.c's bench_cg_loop; only the calls it makes are counted, not
# the loop). With no argument: the
# default and the hardened drop-in (docs/design.md, section 6), built with
# --config=opt. glibc's figure: LIB=none.
# HC_COUNT_DRIVER=PATH: count with that driver and build nothing (what
# //bench:dropin_count_test does, in its sandbox); the libraries must then
# be named, since nothing was built where the default ones would be.
set -euo pipefail
iters=${HC_COUNT_PAIRS:-100000}
size=${HC_COUNT_SIZE:-32}
if [ -n "${HC_COUNT_DRIVER:-}" ]; then
    driver=$HC_COUNT_DRIVER
else
    cd "$(dirname "$0")/../.."
    bazel build ${HC_BAZEL_DISK_CACHE:+--disk_cache=$HC_BAZEL_DISK_CACHE} --config=opt //bench:allocators \
        //stage4_reclaim:libhcmalloc.so //stage4_reclaim:libhcmalloc_hardened.so >&2
    driver=bazel-out/k8-opt/bin/bench/driver_malloc
fi
if [ $# -eq 0 ] && [ -n "${HC_COUNT_DRIVER:-}" ]; then
    echo "usage: HC_COUNT_DRIVER=PATH $0 LIB..." >&2
    exit 2
fi
if [ $# -eq 0 ]; then
    set -- bazel-out/k8-opt/bin/stage4_reclaim/libhcmalloc.so \
        bazel-out/k8-opt/bin/stage4_reclaim/libhcmalloc_hardened.so
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for lib in "$@"; do
    preload=()
    [ "$lib" = none ] || preload=(env "LD_PRELOAD=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")")
    "${preload[@]}" valgrind --tool=callgrind --callgrind-out-file="$out" --compress-strings=no \
        --compress-pos=no "$driver" callgrind "$iters" 0 "$size" 2>/dev/null
    # The inclusive cost of every call bench_cg_loop makes: the line after
    # each calls= line, inside fn=bench_cg_loop.
    awk -v iters="$iters" -v lib="$lib" -v size="$size" '
        /^fn=/ { fn = substr($0, 4); in_call = 0; next }
        /^calls=/ { in_call = 1; next }
        in_call { if (fn == "bench_cg_loop") total += $2; in_call = 0 }
        END { printf "%s: %.2f instructions per malloc(%d) + free pair (%d pairs)\n", lib, total / iters, size, iters }
    ' "$out"
done
