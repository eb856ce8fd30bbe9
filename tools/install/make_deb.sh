#!/bin/bash
# tools/install/make_deb.sh [--from DIR] OUTDIR — the Debian package libhcmalloc,
# built with dpkg-deb alone (no debhelper, no fakeroot: --root-owner-group):
# tools/install/install.sh's files staged under /usr (the libraries in /usr/lib,
# <hcmalloc.h>, the pkg-config files, /usr/bin/hcmalloc), the manifest left
# out (dpkg keeps its own list), written to
# OUTDIR/libhcmalloc_<version>_<arch>.deb. Install it with
#   apt install ./libhcmalloc_*.deb
# --from DIR: the already-built files, as tools/install/install.sh --from takes them
# (tools/install/make_deb_test.sh); without it install.sh builds them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
from=()
if [ "${1:-}" = --from ]; then
    [ $# -ge 2 ] || { echo "usage: $0 [--from DIR] OUTDIR" >&2; exit 2; }
    from=(--from "$(cd "$2" && pwd)")
    shift 2
fi
[ $# -eq 1 ] || { echo "usage: $0 [--from DIR] OUTDIR" >&2; exit 2; }
mkdir -p "$1"
out=$(cd "$1" && pwd)
version=$("$here/install.sh" --version)
arch=$(dpkg --print-architecture)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root="$stage/root"

"$here/install.sh" "${from[@]}" --destdir "$root" /usr >/dev/null
rm -r "$root/usr/share/hcmalloc"
mkdir -p "$root/usr/share/doc/libhcmalloc"
cat >"$root/usr/share/doc/libhcmalloc/README.Debian" <<README
libhcmalloc $version: hcmalloc's drop-in malloc (the stage 4 allocator of the
hcmalloc teaching project) as a system library.

  hcmalloc [--hardened | --profile PREFIX | --leak-check] [--stats] PROGRAM ARGS
      runs PROGRAM with /usr/lib/libhcmalloc*.so preloaded
  cc prog.c \$(pkg-config --cflags --libs hcmalloc)
      links it in (hcmalloc-hardened, hcmalloc-profiler: the other builds;
      cc -static ... \$(pkg-config --static --libs hcmalloc): the archive)

The project's docs/dropin.md describes the libraries and their variables.
README

# glibc 2.34 and up: the libraries bind pthread_* at GLIBC_2.34 (libc alone).
mkdir -p "$root/DEBIAN"
cat >"$root/DEBIAN/control" <<CONTROL
Package: libhcmalloc
Version: $version
Architecture: $arch
Section: libs
Priority: optional
Maintainer: hcmalloc developers <hcmalloc@localhost>
Depends: libc6 (>= 2.34)
Installed-Size: $(du -sk "$root/usr" | cut -f1)
Description: tcmalloc-style malloc replacement, from the hcmalloc teaching project
 hcmalloc's drop-in libraries: per-thread caches, a central cache and a page
 cache behind malloc, free, the rest of the C allocation functions and C++
 operator new/delete. libhcmalloc.so is the default build,
 libhcmalloc_hardened.so checks free-list links and double frees,
 libhcmalloc_profiler.so adds a sampling heap profiler (google-pprof) and a
 leak check at exit. Shared and static, with <hcmalloc.h>, pkg-config files
 and the hcmalloc wrapper, which runs a program with a library preloaded.
CONTROL
(cd "$root" && find usr -type f -exec md5sum {} + | LC_ALL=C sort -k2) >"$root/DEBIAN/md5sums"
deb="$out/libhcmalloc_${version}_${arch}.deb"
dpkg-deb --root-owner-group --build "$root" "$deb" >/dev/null
echo "$deb"
