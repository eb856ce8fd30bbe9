#!/usr/bin/env bash
# tools/labs/stage_diff.sh — what a stage changes in the files it copies: the
# lesson of each changed copy, without the noise.
#
#   tools/labs/stage_diff.sh 3 4              every changed copy of stage 4, against
#                                        the file stage 3 compiles
#   tools/labs/stage_diff.sh 3 4 page_cache.c one file
#   tools/labs/stage_diff.sh 3 4 --raw        plain diff -u, nothing normalised (an
#                                        option may go anywhere)
#
# For each C source or header of stage NEW's package, the earlier file is
# the one its header comment names ("diff this file against PATH", as a
# file that replaces a hook file of an earlier stage does), or else the file
# of the same name that stage OLD builds with: its own, or the one it uses
# by label (the latest stage <= OLD that holds that name).
# Before diffing, both sides lose their header comment (the file's name and
# its "What changed" notes, which differ by construction; the NEW file's
# "What changed" paragraph is printed above its diff instead) and their
# /* LAB BEGIN/END: ... */ marker lines (which the labs need and a changed
# copy may place differently). Files NEW adds are listed, not diffed.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
raw=0
args=()
for arg in "$@"; do # options anywhere: `--raw 3 4` and `3 4 --raw` alike
    case "$arg" in
        --raw) raw=1 ;;
        -*) echo "$0: unknown option $arg" >&2; exit 2 ;;
        *) args+=("$arg") ;;
    esac
done
set -- ${args[@]+"${args[@]}"}
if [[ $# -lt 2 || ! "$1" =~ ^[0-9]+$ || ! "$2" =~ ^[0-9]+$ ]]; then
    echo "usage: $0 [--raw] OLD NEW [FILE...]   (stage numbers, e.g. 3 4)" >&2
    exit 2
fi
old=$1 new=$2
shift 2

stage_dir() { # stage number -> package directory name, or nothing
    local d
    for d in "$root"/stage"$1"_*/; do [[ -d "$d" ]] && basename "$d"; done
}
new_dir=$(stage_dir "$new")
[[ -n "$new_dir" ]] || { echo "$0: no stage $new" >&2; exit 2; }
(( old < new )) || { echo "$0: OLD ($old) must come before NEW ($new)" >&2; exit 2; }

# The file named $1 as stage $old builds it: the latest stage <= old holding it.
earlier_copy() {
    local s d
    for (( s = old; s >= 1; s-- )); do
        d=$(stage_dir "$s")
        if [[ -n "$d" && -f "$root/$d/$1" ]]; then echo "$d/$1"; return; fi
    done
}

# The earlier file a header comment names: "diff this file (or: it) against
# PATH", possibly wrapped over comment lines.
named_counterpart() {
    awk '
        NR == 1 && !/^\/\*/ { exit }
        { sub(/^[ \t]*\/?\*+/, ""); text = text " " $0 }
        /\*\// { exit }
        END {
            if (match(text, /diff (this file|it) +against +[A-Za-z0-9_\/]+\.[ch]/)) {
                n = split(substr(text, RSTART, RLENGTH), w, / +/)
                print w[n]
            }
        }
    ' "$1"
}

# A file without its leading comment block and its LAB marker lines.
normalise() {
    awk '
        NR == 1 && /^\/\*/ { in_header = 1 }
        in_header { if (/\*\//) in_header = 0; next }
        /^[ \t]*\/\* LAB (BEGIN|END): [A-Za-z0-9_]+ \*\/[ \t]*$/ { next }
        { print }
    ' "$1"
}

# The "What changed" paragraph of a file's header comment.
what_changed() {
    awk '
        NR == 1 && !/^\/\*/ { exit }
        /What changed/ { on = 1 }
        on { print }
        /\*\// { exit }
    ' "$1"
}

if [[ $# -gt 0 ]]; then
    files=("$@")
else
    mapfile -t files < <(cd "$root/$new_dir" && ls -- *.c *.h 2>/dev/null | sort)
fi

added=()
for f in "${files[@]}"; do
    [[ -f "$root/$new_dir/$f" ]] || { echo "$0: no $new_dir/$f" >&2; exit 2; }
    prev=$(named_counterpart "$root/$new_dir/$f")
    if [[ -n "$prev" && ! -f "$root/$prev" ]]; then
        echo "$0: $new_dir/$f names $prev, which does not exist" >&2; exit 1
    fi
    [[ -n "$prev" ]] || prev=$(earlier_copy "$f")
    if [[ -z "$prev" ]]; then added+=("$f"); continue; fi
    echo "==== $prev -> $new_dir/$f"
    if (( raw )); then
        (cd "$root" && diff -u "$prev" "$new_dir/$f") || true
        continue
    fi
    what_changed "$root/$new_dir/$f"
    diff -u --label "$prev" --label "$new_dir/$f" \
        <(normalise "$root/$prev") <(normalise "$root/$new_dir/$f") || true
done
if (( ${#added[@]} )); then
    echo "==== new in $new_dir (no earlier copy): ${added[*]}"
fi
