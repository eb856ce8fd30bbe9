# tools/measure/preload_libs.sh — sourced by the scripts that run programs
# under several malloc libraries (security_suite.sh, hardened_malloc_tests.sh),
# from the workspace's root.

# Sets `libs` to the libraries named (the arguments), or, if none is, to
# glibc (none preloaded), then the default and the hardened drop-in, built
# with --config=opt; and `work` to a scratch folder, removed when the script
# exits. A library that is not there stops the script: preloading a missing
# file only warns, and the program would run on glibc under its name.
hc_libs_and_scratch() {
    if [ $# -eq 0 ]; then
        bazel build --config=opt //stage4_reclaim:libhcmalloc.so //stage4_reclaim:libhcmalloc_hardened.so >&2
        libs=(glibc bazel-out/k8-opt/bin/stage4_reclaim/libhcmalloc.so
              bazel-out/k8-opt/bin/stage4_reclaim/libhcmalloc_hardened.so)
    else
        libs=("$@")
    fi
    local lib
    for lib in "${libs[@]}"; do
        [ "$lib" = glibc ] || [ -f "$lib" ] || { echo "$(basename "$0"): no library $lib" >&2; exit 2; }
    done
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
}

# What `env` takes to run a program under LIB: LD_PRELOAD with its absolute
# path, or nothing for "glibc".
hc_preload_env() {
    [ "$1" = glibc ] || echo "LD_PRELOAD=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
}
