#!/bin/bash
# tools/measure/security_suite.sh CHECKOUT [LIB...] — mimalloc-bench's security
# programs (bench/security of github.com/daanx/mimalloc-bench, MIT licence;
# not copied here: CHECKOUT is a clone of that repository) against each
# malloc: LIB is a drop-in library to LD_PRELOAD, or "glibc" for none.
# Default: glibc, then the default and the hardened drop-in (built with
# --config=opt).
#
# Builds the programs as its CMakeLists.txt does (gcc -O2, each C program at
# ALLOCATION_SIZE 8, 4096 and 256 KiB, the C++ ones at 4096: 116 in all)
# and scores each as its bench.sh does: a program that prints NOT_CAUGHT
# got away with its mistake; one that does not (the allocator stopped it:
# an abort, or a crash before the mistake completed) is caught; 1 s at most.
# Prints one line per program and allocator, then the totals, and the
# double-free programs' totals apart (docs/design.md, section 6).
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] || { echo "usage: tools/measure/security_suite.sh MIMALLOC_BENCH_CHECKOUT [LIB|glibc ...]" >&2; exit 2; }
src=$1/bench/security
shift
[ -f "$src/common.h" ] || { echo "security_suite: no $src/common.h" >&2; exit 2; }
source tools/measure/preload_libs.sh
hc_libs_and_scratch "$@"
set -- "${libs[@]}"

flags=(-O2 -Wno-free-nonheap-object -fno-inline -fno-builtin-inline -fno-inline-small-functions
       -fno-ipa-pure-const -w)
for f in "$src"/*.c; do
    name=$(basename "$f" .c)
    for size in small:8 medium:4096 large:'256*1024'; do
        gcc "${flags[@]}" "-DALLOCATION_SIZE=${size#*:}" -I"$src" "$f" -o "$work/${name}_${size%%:*}"
    done
done
for f in "$src"/*.cc; do
    g++ -O2 -std=c++17 -fsized-deallocation -w -DALLOCATION_SIZE=4096 -I"$src" "$f" -o "$work/$(basename "$f" .cc)"
done

declare -A caught total df_caught df_total
for lib in "$@"; do
    mapfile -t env < <(hc_preload_env "$lib")
    caught[$lib]=0 total[$lib]=0 df_caught[$lib]=0 df_total[$lib]=0
    for program in "$work"/*; do
        out=$( (timeout 1s env "${env[@]}" "$program" || echo CRASHED) 2>/dev/null || echo TIMEOUT)
        name=$(basename "$program")
        if ! grep -q NOT_CAUGHT <<<"$out" && ! grep -q TIMEOUT <<<"$out"; then
            verdict="[+]"
            caught[$lib]=$((caught[$lib] + 1))
        else
            verdict="[-]"
        fi
        total[$lib]=$((total[$lib] + 1))
        if [[ $name == double_free* ]]; then
            df_total[$lib]=$((df_total[$lib] + 1))
            [ "$verdict" = "[+]" ] && df_caught[$lib]=$((df_caught[$lib] + 1))
        fi
        echo "$verdict $name $(basename "$lib")"
    done
done
echo
for lib in "$@"; do
    echo "$(basename "$lib"): caught ${caught[$lib]} of ${total[$lib]}, double frees ${df_caught[$lib]} of ${df_total[$lib]}"
done
