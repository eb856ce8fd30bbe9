#!/bin/bash
# stage4_reclaim/checks/link_test.sh STATIC_LIB SHARED_LIB PROG.c PROG.cc HCMALLOC_H
# — docs/dropin.md's link recipe, run as written: a C and a C++ program
# each linked with -lhcmalloc against the static library and against the
# shared one, no LD_PRELOAD; each program checks that hcmalloc answers its
# malloc / operator new (malloc_usable_size 33 -> 48, hc_get_property), and
# the static programs must carry the allocator in themselves.
set -u
# A missing argument would leave the include path empty and test nothing meant.
[ $# -eq 5 ] || { echo "usage: link_test.sh STATIC_LIB SHARED_LIB PROG.c PROG.cc HCMALLOC_H" >&2; exit 2; }
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
static_dir=$(dirname "$(abs "$1")")
shared_dir=$(dirname "$(abs "$2")")
c_src=$(abs "$3")
cc_src=$(abs "$4")
include=$(dirname "$(dirname "$(abs "$5")")") # the directory holding common/
work="${TEST_TMPDIR:-$(mktemp -d)}"
status=0

check() { # NAME: runs $work/NAME, which must print its PASS line
    local out
    if out=$(env -u LD_PRELOAD "$work/$1" 2>&1) && grep -q ": PASS" <<<"$out"; then
        echo "PASS $1: $out"
    else
        echo "FAIL $1: $out"
        status=1
    fi
}

# Static: the archive's path, or -L DIR -lhcmalloc with -static-ish order;
# a C program needs no libstdc++ (dropin_new.cc reaches it weakly).
gcc -I"$include" "$c_src" -L"$static_dir" -lhcmalloc -pthread -o "$work/c_static" &&
    g++ -I"$include" "$cc_src" -L"$static_dir" -lhcmalloc -pthread -o "$work/cc_static" ||
    { echo "FAIL: linking with the static library"; exit 1; }
# Shared: -lhcmalloc, and an rpath (or LD_LIBRARY_PATH) to find it at run time.
gcc -I"$include" "$c_src" -L"$shared_dir" -lhcmalloc -Wl,-rpath,"$shared_dir" -o "$work/c_shared" &&
    g++ -I"$include" "$cc_src" -L"$shared_dir" -lhcmalloc -Wl,-rpath,"$shared_dir" -o "$work/cc_shared" ||
    { echo "FAIL: linking with the shared library"; exit 1; }

for name in c_static cc_static c_shared cc_shared; do check "$name"; done

# The static programs hold hcmalloc's malloc themselves (not a DT_NEEDED),
# and none of its internal names is global in them.
for name in c_static cc_static; do
    if readelf -d "$work/$name" | grep -q 'libhcmalloc'; then
        echo "FAIL $name: needs libhcmalloc.so at run time"; status=1
    fi
    if ! nm "$work/$name" | grep -q ' T malloc$'; then
        echo "FAIL $name: defines no malloc of its own"; status=1
    fi
    if nm "$work/$name" | grep -qE ' T (tc_refill|os_map|pc_alloc_span)$'; then
        echo "FAIL $name: an internal name of hcmalloc is global"; status=1
    fi
done
for name in c_shared cc_shared; do
    if ! readelf -d "$work/$name" | grep -q 'libhcmalloc.so'; then
        echo "FAIL $name: does not need libhcmalloc.so"; status=1
    fi
done
exit $status
