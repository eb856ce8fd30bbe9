#!/bin/bash
# stage4_reclaim/static_lib.sh OUT ARCHIVE... — the static libhcmalloc.a:
# the archives Bazel built for the drop-in (one object per source), linked
# into one relocatable object whose hidden names are made local, as
# tests/symbols_test.sh checks: a program linking it sees only the malloc
# family, new/delete and the hc_* API, and none of tc_refill, os_map...
# Bazel may build an archive twice, position-independent (.pic.a, .pic.lo)
# and not; one copy of each is taken, the PIC one where both exist.
set -euo pipefail
out=$1
shift
declare -A chosen
for archive in "$@"; do
    case $archive in
        *.pic.a | *.pic.lo) base=${archive%.pic.*} ;;
        *.a | *.lo) base=${archive%.*}; [[ -n ${chosen[$base]:-} ]] && continue ;;
        *) continue ;;
    esac
    chosen[$base]=$archive
done
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
ld -r --whole-archive "${chosen[@]}" -o "$scratch/all.o"
objcopy --localize-hidden "$scratch/all.o" "$scratch/hcmalloc.o"
rm -f "$out"
ar rcs "$out" "$scratch/hcmalloc.o"
