#!/bin/bash
# tools/install/install_test.sh INSTALL_SH HEADER NEW_CHECK INSTALL_CHECK_C INSTALL_CHECK_CC LIBRARY...
# — tools/install/install.sh as a user runs it, from the libraries Bazel built
# (--from: a test cannot run bazel), into a scratch prefix:
#   1. the files it installs, and the manifest that lists them;
#   2. a C and a C++ program built with `pkg-config` alone (<hcmalloc.h>),
#      shared and static: malloc and operator new are hcmalloc's;
#   3. the wrapper: a C program built without hcmalloc finds, from inside
#      (/proc/self/maps, hc_get_property), the library each option names as
#      its malloc, and no libstdc++; the profile and stats options do
#      what they say; the C++ new/delete check (the new-handler,
#      std::bad_alloc, nothrow) passes through it;
#   4. the installed drop-in needs libc alone (ldd);
#   5. --uninstall removes every file it installed.
set -u
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
install_sh=$(abs "$1")
header=$(abs "$2")
new_check=$(abs "$3")
check_c=$(abs "$4")
check_cc=$(abs "$5")
shift 5
work="${TEST_TMPDIR:-$(mktemp -d)}"
status=0
fail() { echo "FAIL $*"; status=1; }
pass() { echo "PASS $*"; }

files="$work/built"
mkdir -p "$files"
for lib in "$@"; do cp "$(abs "$lib")" "$files/"; done
cp "$header" "$files/"
prefix="$work/prefix"

# ---- 1. Install ----------------------------------------------------------------------
"$install_sh" --from "$files" "$prefix" || { fail "install.sh exited $?"; exit 1; }
expected="bin/hcmalloc
include/hcmalloc.h
lib/libhcmalloc.a
lib/libhcmalloc.so
lib/libhcmalloc_hardened.a
lib/libhcmalloc_hardened.so
lib/libhcmalloc_profiler.a
lib/libhcmalloc_profiler.so
lib/pkgconfig/hcmalloc-hardened.pc
lib/pkgconfig/hcmalloc-profiler.pc
lib/pkgconfig/hcmalloc.pc
share/hcmalloc/manifest"
actual=$(cd "$prefix" && find . -type f | sed 's|^\./||' | LC_ALL=C sort)
if [ "$actual" = "$expected" ]; then pass "install: the 12 files"; else fail "install: files"; diff <(echo "$expected") <(echo "$actual"); fi
if [ "$(LC_ALL=C sort "$prefix/share/hcmalloc/manifest")" = "$expected" ]; then
    pass "install: the manifest lists every file"
else
    fail "install: the manifest"; cat "$prefix/share/hcmalloc/manifest"
fi

# ---- 2. pkg-config alone ----------------------------------------------------------------
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
run_check() { # NAME ARGS...: runs $work/NAME, which must print a PASS line
    local name=$1 out
    shift
    if out=$(env -u LD_PRELOAD "$work/$name" "$@" 2>&1) && grep -q 'PASS' <<<"$out"; then
        pass "$name: $out"
    else
        fail "$name: $out"
    fi
}
# shellcheck disable=SC2046 # pkg-config's words are meant to split
gcc "$check_c" $(pkg-config --cflags --libs hcmalloc) -o "$work/c_shared" &&
    g++ "$check_cc" $(pkg-config --cflags --libs hcmalloc) -o "$work/cc_shared" &&
    gcc -static "$check_c" $(pkg-config --static --cflags --libs hcmalloc) -o "$work/c_static" &&
    g++ -static "$check_cc" $(pkg-config --static --cflags --libs hcmalloc) -o "$work/cc_static" ||
    fail "pkg-config: a program did not build"
for name in c_shared c_static; do run_check "$name" linked; done
for name in cc_shared cc_static; do run_check "$name"; done
if readelf -d "$work/c_shared" | grep -q 'NEEDED.*libhcmalloc.so' && ! readelf -d "$work/c_static" | grep -q NEEDED; then
    pass "pkg-config: the shared program needs libhcmalloc.so, the static one nothing"
else
    fail "pkg-config: shared and static links"
fi
if readelf -d "$prefix/lib/libhcmalloc.so" >/dev/null && ! readelf -d "$work/c_shared" | grep -q 'NEEDED.*libstdc++'; then
    pass "pkg-config: the C program needs no libstdc++"
else
    fail "pkg-config: the C program needs libstdc++"
fi

# ---- 3. The wrapper ---------------------------------------------------------------------
gcc -DINSTALL_CHECK_PRELOADED_ONLY "$check_c" -I"$prefix/include" -ldl -o "$work/plain" ||
    fail "the plain program did not build"
wrapper="$prefix/bin/hcmalloc"
through() { # WRAPPER_ARGS... -- LIBRARY: the plain program through the wrapper
    local lib=${*: -1} out
    if out=$("$wrapper" "${@:1:$#-1}" "$work/plain" preloaded "$prefix/lib/$lib" 2>"$work/wrapper.err") &&
        grep -q PASS <<<"$out"; then
        pass "wrapper ${*:1:$#-1}: $lib is the malloc: $out"
    else
        fail "wrapper ${*:1:$#-1}: $out"; cat "$work/wrapper.err"
    fi
}
through -- libhcmalloc.so
through libhcmalloc.so # no "--": the program's name ends the options
through --hardened -- libhcmalloc_hardened.so
through --profile "$work/prof" -- libhcmalloc_profiler.so
if ls "$work"/prof.*.heap >/dev/null 2>&1; then pass "wrapper --profile: a profile written"; else fail "wrapper --profile: no profile"; fi
through --stats -- libhcmalloc.so
if grep -q '^hcmalloc (stage4_reclaim)' "$work/wrapper.err"; then pass "wrapper --stats: the report"; else fail "wrapper --stats: no report"; fi
through --leak-check -- libhcmalloc_profiler.so
if grep -q '^hcmalloc: leak check:' "$work/wrapper.err"; then pass "wrapper --leak-check: the report"; else fail "wrapper --leak-check: no report"; fi
if "$wrapper" --hardened --profile x -- /bin/true 2>/dev/null; then fail "wrapper: --hardened with --profile accepted"; fi
if "$wrapper" --bogus /bin/true 2>/dev/null; then fail "wrapper: an unknown option accepted"; fi
if out=$("$wrapper" -- "$new_check" 2>&1) && grep -q PASS <<<"$out"; then
    pass "wrapper: C++ new/delete, the new-handler and std::bad_alloc: $out"
else
    fail "wrapper: the C++ check: $out"
fi

# ---- 4. The drop-in needs libc alone -----------------------------------------------------
for lib in libhcmalloc.so libhcmalloc_hardened.so; do
    deps=$(ldd "$prefix/lib/$lib" | awk '{print $1}' | grep -v -e '^linux-vdso' -e '^/lib64/ld-linux' -e '^libc\.so' || true)
    if [ -z "$deps" ]; then pass "ldd $lib: libc alone"; else fail "ldd $lib: also $deps"; fi
done

# ---- 5. Uninstall ------------------------------------------------------------------------
"$install_sh" --uninstall "$prefix" >/dev/null || fail "uninstall exited $?"
left=$(find "$prefix" -mindepth 1)
if [ -z "$left" ]; then pass "uninstall: nothing left"; else fail "uninstall left: $left"; fi
exit $status
