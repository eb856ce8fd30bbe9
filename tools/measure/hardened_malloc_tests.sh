#!/bin/bash
# tools/measure/hardened_malloc_tests.sh CHECKOUT [LIB...] — GrapheneOS
# hardened_malloc's own test programs (test/ of
# github.com/GrapheneOS/hardened_malloc, MIT licence; not copied here:
# CHECKOUT is a clone of that repository) against each malloc: LIB is a
# drop-in library to LD_PRELOAD, or "glibc" for none. Default: glibc, then
# the default and the hardened drop-in (built with --config=opt).
#
# Each program is built as test/Makefile builds it, but against libc
# instead of hardened_malloc: the ones that call its own API
# (malloc_object_size) cannot be, and are listed as left out. What each
# must do is test/test_smc.py's return code (0, killed by SIGABRT: -6, or
# by SIGSEGV: -11); its messages are hardened_malloc's own words, so only
# the code is compared. A program stopped by the other signal than the one
# expected is "stopped, another way". Prints one line per program and
# library, then the totals (docs/design.md, section 6).
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] || { echo "usage: tools/measure/hardened_malloc_tests.sh HARDENED_MALLOC_CHECKOUT [LIB|glibc ...]" >&2; exit 2; }
src=$1/test
shift
[ -f "$src/test_smc.py" ] || { echo "hardened_malloc_tests: no $src/test_smc.py" >&2; exit 2; }
source tools/measure/preload_libs.sh
hc_libs_and_scratch "$@"
set -- "${libs[@]}"

# NAME EXPECTED-CODE, in test_smc.py's order.
python3 - "$src/test_smc.py" >"$work/expected" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
for body in re.split(r"\n    def test_", text)[1:]:
    name = re.search(r'run_test\(\s*"([^"]+)"\)', body)
    code = re.search(r"assertEqual\(returncode, (-?\d+)\)", body)
    if name and code:
        print(name.group(1), code.group(1))
EOF

# What glibc 2.36 lacks and the programs call: C23's free_sized, and
# hardened_malloc's own malloc_object_size. A library of stubs that say so
# and exit 127 links them; a preloaded malloc that has the function comes
# first when the program runs.
cat >"$work/absent.c" <<'EOF2'
#include <stdio.h>
#include <unistd.h>
#define ABSENT(name) void name(void) { fputs(#name ": not in this malloc\n", stderr); _exit(127); }
ABSENT(free_sized)
ABSENT(free_aligned_sized)
ABSENT(malloc_object_size)
ABSENT(malloc_object_size_fast)
EOF2
gcc -shared -fPIC -w "$work/absent.c" -o "$work/libabsent.so"

# As test/Makefile, less -lhardened_malloc; C23 is c2x to gcc 12.
flags=(-O3 -D_GNU_SOURCE -DSLAB_CANARY=true -DCONFIG_EXTENDED_SIZE_CLASSES=true -w -pthread
       -L"$work" -Wl,-rpath,"$work" -Wl,--no-as-needed -labsent)
left_out=()
while read -r name _; do
    if [ -f "$src/$name.c" ]; then
        gcc -std=c2x "$src/$name.c" "${flags[@]}" -o "$work/$name" 2>/dev/null || left_out+=("$name")
    else
        g++ -std=c++17 -fsized-deallocation "$src/$name.cc" "${flags[@]}" -o "$work/$name" 2>/dev/null ||
            left_out+=("$name")
    fi
    # Linked, but calling hardened_malloc's own API: not a test of another malloc.
    if [ -x "$work/$name" ] && [[ $(nm -u "$work/$name") == *malloc_object_size* ]]; then
        rm -f "$work/$name"
        left_out+=("$name")
    fi
done <"$work/expected"

declare -A same other
for lib in "$@"; do
    mapfile -t env < <(hc_preload_env "$lib")
    same[$lib]=0 other[$lib]=0
    while read -r name want; do
        [ -x "$work/$name" ] || continue
        status=0
        # (This shell's own notice of the signal, to /dev/null.)
        { (cd "$work" && timeout 10s env "${env[@]}" "./$name" >/dev/null 2>"$work/stderr") || status=$?; } 2>/dev/null
        got=$status
        [ "$status" -gt 128 ] && got=$((128 - status))
        if [ "$got" = "$want" ]; then
            verdict="[+]"
            same[$lib]=$((same[$lib] + 1))
        elif [ "$want" != 0 ] && [ "$got" -lt 0 ]; then
            verdict="[~]" # stopped, by the other signal
            other[$lib]=$((other[$lib] + 1))
        else
            verdict="[-]"
        fi
        echo "$verdict $name $(basename "$lib"): expected $want, got $got $(head -c 160 "$work/stderr" | tr '\n' ' ')"
    done <"$work/expected"
done
echo
echo "left out (hardened_malloc's own API, or not built): ${left_out[*]:-none}"
ran=$(($(wc -l <"$work/expected") - ${#left_out[@]}))
for lib in "$@"; do
    echo "$(basename "$lib"): as hardened_malloc ${same[$lib]} of $ran, stopped another way ${other[$lib]}"
done
