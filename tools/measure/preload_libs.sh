# tools/measure/preload_libs.sh — sourced by the scripts that run programs
# under several malloc libraries (security_suite.sh, hardened_malloc_tests.sh),
# from the workspace's root.

# The libraries compared when none is named: glibc (none preloaded), then
# the default and the hardened drop-in, built with --config=opt. Prints one
# per line.
hc_default_libs() {
    bazel build --config=opt //stage4_reclaim:libhcmalloc.so //stage4_reclaim:libhcmalloc_hardened.so >&2
    printf '%s\n' glibc bazel-out/k8-opt/bin/stage4_reclaim/libhcmalloc.so \
        bazel-out/k8-opt/bin/stage4_reclaim/libhcmalloc_hardened.so
}

# Sets `libs` to the libraries named (the arguments), or to the default
# ones if none is, and `work` to a scratch folder, removed when the script
# exits.
hc_libs_and_scratch() {
    if [ $# -eq 0 ]; then
        mapfile -t libs < <(hc_default_libs)
    else
        libs=("$@")
    fi
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
}

# What `env` takes to run a program under LIB: LD_PRELOAD with its absolute
# path, or nothing for "glibc".
hc_preload_env() {
    [ "$1" = glibc ] || echo "LD_PRELOAD=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
}
