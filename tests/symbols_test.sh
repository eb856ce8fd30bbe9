#!/bin/bash
# tests/symbols_test.sh ARCHIVE... — a stage's static libraries keep their
# internal names to themselves (docs/design.md, "Symbols"):
#   1. every global they define is public API (the hc_* functions of
#      common/hcmalloc.h and the two tool entry points, marked HC_EXPORT) or
#      hidden (-fvisibility=hidden): so no shared object built from them
#      exports an internal name;
#   2. linked into one relocatable object with the hidden names made local
#      (ld -r, objcopy --localize-hidden: how a static library that ships
#      outside Bazel is made), only the public API is left global: so a
#      program that links the stage statically cannot clash with os_map,
#      tc_refill, sc_table and the rest, while the source, gdb and perf all
#      show those names as they are written.
set -euo pipefail
public=(
    hc_malloc hc_free_sized hc_calloc hc_free hc_realloc hc_aligned_alloc
    hc_usable_size hc_thread_flush hc_release_free_memory hc_get_stats
    hc_stage_name hc_features hc_get_property hc_dump_heap_profile
    hc_dump_heap_svg # the heap-map tool's entry (stage3_pagecache/heap_map.h)
    hc_trace_write   # the tier-traffic trace's (common/trace.h)
)
declare -A is_public
for name in "${public[@]}"; do is_public[$name]=1; done

# What a sanitizer's instrumentation adds (--config=asan: one ODR indicator
# per global), not names of ours.
is_instrumentation() {
    [[ $1 == __odr_asan* || $1 == __asan_* || $1 == ___asan_gen_* || $1 == __tsan_* ]]
}

archives=()
for archive in "$@"; do
    [[ $archive == *.a ]] || continue # a library's other outputs
    if [[ ! -f $archive ]]; then
        echo "FAIL: $archive is missing"
        exit 1
    fi
    archives+=("$archive")
done
# -c opt builds a library both ways (lib.a and lib.pic.a): one of each
# library is linked below, or every name would be defined twice.
linked=()
for archive in "${archives[@]}"; do
    if [[ $archive == *.pic.a ]]; then
        twin=${archive%.pic.a}.a
        present=0
        for other in "${archives[@]}"; do [[ $other == "$twin" ]] && present=1; done
        ((present)) && continue
    fi
    linked+=("$archive")
done
if ((${#archives[@]} == 0)); then
    echo "FAIL: no archive among: $*"
    exit 1
fi

status=0
# 1. readelf -s: "Num: Value Size Type Bind Vis Ndx Name"; defined globals
# (GLOBAL or WEAK binding, a section index) that are not HIDDEN.
for archive in "${archives[@]}"; do
    while read -r name; do
        is_instrumentation "$name" && continue
        [[ -n ${is_public[$name]:-} ]] && continue
        echo "FAIL: $archive: global $name is neither public API nor hidden (compile with -fvisibility=hidden; export only with HC_EXPORT)"
        status=1
    done < <(readelf -sW "$archive" |
             awk '($5 == "GLOBAL" || $5 == "WEAK") && $6 != "HIDDEN" && $7 != "UND" && NF >= 8 {print $8}' | sort -u)
done

# 2. The localized object: only public API is global.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
ld -r --whole-archive "${linked[@]}" -o "$scratch/all.o"
objcopy --localize-hidden "$scratch/all.o" "$scratch/localized.o"
while read -r name; do
    is_instrumentation "$name" && continue
    [[ -n ${is_public[$name]:-} ]] && continue
    echo "FAIL: after --localize-hidden, $name is still global"
    status=1
done < <(nm -g --defined-only "$scratch/localized.o" | awk 'NF == 3 {print $3}' | sort -u)
# Internal names are still there, as local symbols, for gdb and perf.
# (Read into a variable: under pipefail, grep -q's early exit could SIGPIPE nm.)
local_names=$(nm "$scratch/localized.o" | awk 'NF == 3 && ($2 == "t" || $2 == "r" || $2 == "d" || $2 == "b") {print $3}')
if [[ $'\n'$local_names$'\n' != *$'\n'sc_table$'\n'* && $'\n'$local_names$'\n' != *$'\n'os_map$'\n'* ]]; then
    echo "FAIL: the localized object lost the internal names (sc_table, os_map) a debugger needs"
    status=1
fi
[ $status -eq 0 ] && echo "PASS: ${#archives[@]} archives: internal globals hidden, and local once localized"
exit $status
