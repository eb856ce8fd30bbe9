#!/bin/bash
# tools/install/make_deb_test.sh MAKE_DEB_SH HEADER LIBRARY... — tools/install/make_deb.sh
# from the built libraries (--from): the package's files (dpkg-deb -c),
# its control fields (dpkg-deb -f), and what it installs pointing at /usr:
# the pkg-config files with no rpath, the wrapper at /usr/lib.
set -u
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
make_deb=$(abs "$1")
header=$(abs "$2")
shift 2
work="${TEST_TMPDIR:-$(mktemp -d)}"
status=0
fail() { echo "FAIL $*"; status=1; }
pass() { echo "PASS $*"; }

mkdir -p "$work/built"
for lib in "$@"; do cp "$(abs "$lib")" "$work/built/"; done
cp "$header" "$work/built/"
deb=$("$make_deb" --from "$work/built" "$work/out") || { fail "make_deb.sh exited $?"; exit 1; }
case $(basename "$deb") in
    libhcmalloc_*_"$(dpkg --print-architecture)".deb) pass "package: $(basename "$deb")" ;;
    *) fail "package name: $deb" ;;
esac

expected="./usr/bin/hcmalloc
./usr/include/hcmalloc.h
./usr/lib/libhcmalloc.a
./usr/lib/libhcmalloc.so
./usr/lib/libhcmalloc_hardened.a
./usr/lib/libhcmalloc_hardened.so
./usr/lib/libhcmalloc_profiler.a
./usr/lib/libhcmalloc_profiler.so
./usr/lib/pkgconfig/hcmalloc-hardened.pc
./usr/lib/pkgconfig/hcmalloc-profiler.pc
./usr/lib/pkgconfig/hcmalloc.pc
./usr/share/doc/libhcmalloc/README.Debian"
actual=$(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ {print $6}' | LC_ALL=C sort)
if [ "$actual" = "$expected" ]; then
    pass "dpkg-deb -c: the 12 files"
else
    fail "dpkg-deb -c"; diff <(echo "$expected") <(echo "$actual")
fi
if dpkg-deb -c "$deb" | awk '{print $2}' | grep -qv '^root/root$'; then
    fail "dpkg-deb -c: a file not owned by root"
fi
[ "$(dpkg-deb -f "$deb" Package)" = libhcmalloc ] || fail "control: Package"
[ "$(dpkg-deb -f "$deb" Version)" = "$("$(dirname "$make_deb")/install.sh" --version)" ] || fail "control: Version"
[[ $(dpkg-deb -f "$deb" Depends) == "libc6 (>= "* ]] || fail "control: Depends"
[ $status -eq 0 ] && pass "control: Package, Version, Depends"

dpkg-deb -x "$deb" "$work/root"
pc="$work/root/usr/lib/pkgconfig/hcmalloc.pc"
if grep -qx 'prefix=/usr' "$pc" && ! grep -q rpath "$pc"; then
    pass "hcmalloc.pc: prefix /usr, no rpath"
else
    fail "hcmalloc.pc"; cat "$pc"
fi
if grep -qx "libdir='/usr/lib'" "$work/root/usr/bin/hcmalloc"; then
    pass "/usr/bin/hcmalloc preloads from /usr/lib"
else
    fail "/usr/bin/hcmalloc: libdir"
fi
exit $status
