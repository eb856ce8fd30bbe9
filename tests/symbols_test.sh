#!/bin/bash
# tests/symbols_test.sh ARCHIVE... — every global symbol a stage's static
# libraries define is public API (the hc_* functions of common/hcmalloc.h and
# the two tool entry points) or carries the internal prefix hci_ (common/
# namespace.h). Anything else could clash with a program's own names when the
# stage is linked statically. A new global fails here until namespace.h
# gives it its hci_ spelling (docs/design.md, "Symbols").
set -euo pipefail
public=(
    hc_malloc hc_free_sized hc_calloc hc_free hc_realloc hc_aligned_alloc
    hc_usable_size hc_thread_flush hc_release_free_memory hc_get_stats
    hc_stage_name hc_features
    hc_dump_heap_svg # the heap-map tool's entry (stage3_pagecache/heap_map.h)
    hc_trace_write   # the tier-traffic trace's (common/trace.h)
)
declare -A is_public
for name in "${public[@]}"; do is_public[$name]=1; done
status=0
checked=0
for archive in "$@"; do
    [[ $archive == *.a ]] || continue # a library's other outputs
    if [[ ! -f $archive ]]; then
        echo "FAIL: $archive is missing"
        exit 1
    fi
    checked=$((checked + 1))
    # Defined globals (T, D, B, R, V, W...): "ADDRESS TYPE NAME" lines.
    while read -r name; do
        [[ $name == hci_* ]] && continue
        # What a sanitizer's instrumentation adds (--config=asan: one ODR
        # indicator per global), not names of ours.
        [[ $name == __odr_asan* || $name == __asan_* || $name == ___asan_gen_* || $name == __tsan_* ]] && continue
        # (A lookup, not `printf | grep -q`: under pipefail grep's early exit
        # can fail printf with SIGPIPE and make a public name look foreign.)
        [[ -n ${is_public[$name]:-} ]] && continue
        echo "FAIL: $archive defines global $name: neither public API nor hci_ (add it to common/namespace.h)"
        status=1
    done < <(nm -g --defined-only "$archive" | awk 'NF == 3 {print $3}' | sort -u)
    # (nm's failure would not stop the loop above: check it once more.)
    nm -g --defined-only "$archive" >/dev/null
done
if ((checked == 0)); then
    echo "FAIL: no archive among: $*"
    exit 1
fi
[ $status -eq 0 ] && echo "PASS: $checked archives define only public API and hci_ globals"
exit $status
