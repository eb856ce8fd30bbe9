#!/bin/bash
# stage4_reclaim/checks/dropin_exports_test.sh LIB — libhcmalloc.so exports the
# public API (common/hcmalloc.h), the malloc family, glibc's __libc_* entry
# points and C++ new/delete, and nothing else: no internal name (tc_, cc_,
# pc_, pm_, os_, pool_, sc_...) can clash with a program's or be interposed.
# Nor the heap map's hc_dump_heap_svg: a tool's entry, which only the traced
# drop-in links in (stage4_reclaim/BUILD, :heap_map).
# And it needs libc alone: no libstdc++, libm or libgcc_s loaded into every
# process that preloads it (dropin_new.cc binds libstdc++ weakly).
set -euo pipefail
lib=$1
expected=(
    hc_malloc hc_free_sized hc_calloc hc_free hc_realloc hc_aligned_alloc
    hc_usable_size hc_thread_flush hc_release_free_memory hc_get_stats
    hc_stage_name hc_features hc_get_property hc_dump_heap_profile
    malloc free calloc realloc reallocarray memalign aligned_alloc
    posix_memalign valloc pvalloc malloc_usable_size free_sized
    free_aligned_sized malloc_trim malloc_stats mallinfo mallinfo2
    __libc_malloc __libc_free __libc_calloc __libc_realloc __libc_memalign
)
# Defined, global, dynamic symbols: functions and data (not the version node).
mapfile -t exported < <(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sed 's/@.*//' | sort -u)
# Lookups, not `printf | grep -q`: under pipefail grep's early exit can fail
# printf with SIGPIPE and turn a match into a miss.
declare -A is_expected is_exported
for name in "${expected[@]}"; do is_expected[$name]=1; done
for name in "${exported[@]}"; do is_exported[$name]=1; done
status=0
for name in "${exported[@]}"; do
    case $name in
        _Znw* | _Zna* | _Zdl* | _Zda*) continue ;; # operator new / delete
    esac
    if [[ -z ${is_expected[$name]:-} ]]; then
        echo "FAIL: $lib exports $name, which is not public API"
        status=1
    fi
done
for name in "${expected[@]}"; do
    if [[ -z ${is_exported[$name]:-} ]]; then
        echo "FAIL: $lib does not export $name"
        status=1
    fi
done
# (Under --config=asan or tsan the whole build links the sanitizer's
# runtime, which a sanitized library needs: that one is allowed.)
mapfile -t needed < <(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -v -E '^lib[at]san\.so')
if [[ "${needed[*]}" != "libc.so.6" ]]; then
    echo "FAIL: $lib needs ${needed[*]}, not libc.so.6 alone"
    status=1
fi
[ $status -eq 0 ] && echo "PASS: $lib exports ${#exported[@]} symbols, all public"
exit $status
