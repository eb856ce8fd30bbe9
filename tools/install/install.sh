#!/bin/bash
# tools/install/install.sh — install hcmalloc's drop-in libraries under a prefix, to
# use outside Bazel as a system malloc (README, "Installing it"; docs/dropin.md,
# section 7):
#
#   tools/install/install.sh [--from DIR] [--destdir DIR] PREFIX
#   tools/install/install.sh --uninstall PREFIX
#   tools/install/install.sh --version
#
# It builds //stage4_reclaim:libs with --config=opt (or, with --from DIR,
# takes those files already built from DIR: the six libraries and
# hcmalloc.h side by side, as tools/install/install_test.sh and tools/install/make_deb.sh
# pass them) and installs
#   PREFIX/lib/libhcmalloc{,_hardened,_profiler}.so     the drop-ins (LD_PRELOAD, -l)
#   PREFIX/lib/libhcmalloc{,_hardened,_profiler}.a      the same, static (localized)
#   PREFIX/include/hcmalloc.h                           the public API (#include <hcmalloc.h>)
#   PREFIX/lib/pkgconfig/hcmalloc{,-hardened,-profiler}.pc
#   PREFIX/bin/hcmalloc                                 the wrapper (hcmalloc --help)
#   PREFIX/share/hcmalloc/manifest                      what was installed, for --uninstall
# --destdir DIR stages the same files under DIR/PREFIX, with PREFIX written
# into the .pc files and the wrapper (a package's build root).
# HCMALLOC_BAZEL_FLAGS: more flags for that bazel build (a --disk_cache...).
set -euo pipefail

# The version the .pc files and the Debian package carry.
HCMALLOC_VERSION=0.4.0
VARIANTS=(hcmalloc hcmalloc_hardened hcmalloc_profiler)

usage() {
    echo "usage: $0 [--from DIR] [--destdir DIR] PREFIX | --uninstall PREFIX | --version" >&2
    exit 2
}

from= destdir= uninstall=0
while [ $# -gt 0 ]; do
    case $1 in
        --from) [ $# -ge 2 ] || usage; from=$2; shift 2 ;;
        --destdir) [ $# -ge 2 ] || usage; destdir=$2; shift 2 ;;
        --uninstall) uninstall=1; shift ;;
        --version) echo "$HCMALLOC_VERSION"; exit 0 ;;
        -h | --help) usage ;;
        -*) echo "$0: unknown option $1" >&2; usage ;;
        *) break ;;
    esac
done
[ $# -eq 1 ] || usage
prefix=$1
case $prefix in
    /*) ;;
    *) prefix=$(mkdir -p "$prefix" && cd "$prefix" && pwd) ;; # the .pc files need it absolute
esac
root=$destdir$prefix
manifest=share/hcmalloc/manifest

# ---- Uninstall: every file the manifest lists, then the directories left empty --
if [ $uninstall = 1 ]; then
    if [ ! -f "$root/$manifest" ]; then
        echo "$0: no $root/$manifest: nothing installed there by this script" >&2
        exit 1
    fi
    while IFS= read -r file; do
        rm -f "$root/$file"
    done <"$root/$manifest"
    rm -f "$root/$manifest"
    for dir in share/hcmalloc share lib/pkgconfig lib include bin; do
        rmdir "$root/$dir" 2>/dev/null || true
    done
    echo "hcmalloc: uninstalled from $prefix"
    exit 0
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# ---- The files: built here, or given ---------------------------------------------------
if [ -z "$from" ]; then
    repo=$(cd "$(dirname "$0")/../.." && pwd)
    # shellcheck disable=SC2086 # the flags are words
    (cd "$repo" && bazel build ${HCMALLOC_BAZEL_FLAGS:-} --config=opt //stage4_reclaim:libs)
    bin="$repo/bazel-bin/stage4_reclaim"
    from=$scratch/files
    mkdir "$from"
    for v in "${VARIANTS[@]}"; do
        cp "$bin/lib$v.so" "$bin/static/lib$v.a" "$from/"
    done
    cp "$repo/common/hcmalloc.h" "$from/"
fi
for v in "${VARIANTS[@]}"; do
    for f in "lib$v.so" "lib$v.a"; do
        [ -r "$from/$f" ] || { echo "$0: $from/$f is missing" >&2; exit 1; }
    done
done
[ -r "$from/hcmalloc.h" ] || { echo "$0: $from/hcmalloc.h is missing" >&2; exit 1; }
# The header is installed alone: it must need no other project header.
if grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$from/hcmalloc.h" >&2; then
    echo "$0: hcmalloc.h includes a project header, which PREFIX/include would not have" >&2
    exit 1
fi

installed=()
put() { # MODE SOURCE DEST (relative to PREFIX)
    install -D -m "$1" "$2" "$root/$3"
    installed+=("$3")
}

for v in "${VARIANTS[@]}"; do
    put 0755 "$from/lib$v.so" "lib/lib$v.so"
    put 0644 "$from/lib$v.a" "lib/lib$v.a"
done
put 0644 "$from/hcmalloc.h" "include/hcmalloc.h"

# pkg-config: hcmalloc.pc is the default library; -hardened and -profiler the
# others. `pkg-config --libs` links the shared one, with an rpath unless
# PREFIX/lib is the loader's own (/usr/lib); `cc -static ...
# $(pkg-config --static --libs NAME)` the archive (the static program needs
# -pthread, which Libs.private adds).
rpath='-Wl,-rpath,${libdir} '
[ "$prefix" = /usr ] && rpath=
for v in "${VARIANTS[@]}"; do
    name=${v//_/-}
    case $v in
        hcmalloc) what="the default build" ;;
        hcmalloc_hardened) what="the hardened build: checked free-list links and free tags" ;;
        hcmalloc_profiler) what="the sampling heap profiler and leak check (HCMALLOC_PROFILE, HCMALLOC_LEAK_CHECK)" ;;
    esac
    cat >"$scratch/$name.pc" <<EOF
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: $name
Description: hcmalloc, a tcmalloc-style malloc, operator new/delete and the hc_* API: $what
Version: $HCMALLOC_VERSION
Libs: -L\${libdir} $rpath-l$v
Libs.private: -pthread
Cflags: -I\${includedir}
EOF
    put 0644 "$scratch/$name.pc" "lib/pkgconfig/$name.pc"
done

# The wrapper, as jemalloc's jemalloc.sh: the program run with a drop-in
# preloaded. POSIX sh, so it runs wherever the libraries do.
cat >"$scratch/hcmalloc" <<EOF
#!/bin/sh
# hcmalloc [--hardened | --profile PREFIX | --leak-check] [--stats] [--] PROGRAM [ARGS...]
# Runs PROGRAM with hcmalloc as its malloc (LD_PRELOAD), installed by
# hcmalloc's tools/install/install.sh, version $HCMALLOC_VERSION.
libdir='$prefix/lib'
EOF
cat >>"$scratch/hcmalloc" <<'EOF'
usage() {
    cat <<USAGE
usage: hcmalloc [OPTION]... [--] PROGRAM [ARGS...]
Runs PROGRAM with hcmalloc's drop-in library as its malloc and operator new.
  --hardened         the hardened library: forged free-list links and double
                     frees stop the program (libhcmalloc_hardened.so)
  --profile PREFIX   the heap profiler: PREFIX.<pid>.<n>.heap for google-pprof
                     (libhcmalloc_profiler.so, HCMALLOC_PROFILE=PREFIX)
  --leak-check       the profiler's leak check at exit (HCMALLOC_LEAK_CHECK=1)
  --stats            the allocator's report on stderr at exit (HCMALLOC_STATS=1)
Other HCMALLOC_* variables pass through (docs/dropin.md, section 7).
USAGE
}
lib=libhcmalloc.so
while [ $# -gt 0 ]; do
    case $1 in
        --hardened) hardened=1 ;;
        --profile)
            [ $# -ge 2 ] || { echo "hcmalloc: --profile needs a PREFIX" >&2; exit 2; }
            HCMALLOC_PROFILE=$2; export HCMALLOC_PROFILE; profiler=1; shift ;;
        --profile=*) HCMALLOC_PROFILE=${1#--profile=}; export HCMALLOC_PROFILE; profiler=1 ;;
        --leak-check) HCMALLOC_LEAK_CHECK=1; export HCMALLOC_LEAK_CHECK; profiler=1 ;;
        --stats) HCMALLOC_STATS=1; export HCMALLOC_STATS ;;
        -h | --help) usage; exit 0 ;;
        --) shift; break ;;
        -*) echo "hcmalloc: unknown option $1" >&2; usage >&2; exit 2 ;;
        *) break ;;
    esac
    shift
done
if [ -n "${hardened:-}" ] && [ -n "${profiler:-}" ]; then
    echo "hcmalloc: --hardened and the profiler are two libraries: choose one" >&2
    exit 2
fi
[ -n "${hardened:-}" ] && lib=libhcmalloc_hardened.so
[ -n "${profiler:-}" ] && lib=libhcmalloc_profiler.so
[ $# -gt 0 ] || { usage >&2; exit 2; }
[ -r "$libdir/$lib" ] || { echo "hcmalloc: $libdir/$lib is missing" >&2; exit 1; }
LD_PRELOAD="$libdir/$lib${LD_PRELOAD:+ $LD_PRELOAD}"
export LD_PRELOAD
exec "$@"
EOF
put 0755 "$scratch/hcmalloc" "bin/hcmalloc"

printf '%s\n' "${installed[@]}" "$manifest" >"$scratch/manifest"
install -D -m 0644 "$scratch/manifest" "$root/$manifest"
echo "hcmalloc $HCMALLOC_VERSION: installed ${#installed[@]} files under $prefix, listed in $prefix/$manifest"
