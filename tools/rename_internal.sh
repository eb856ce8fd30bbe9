#!/usr/bin/env bash
# tools/rename_internal.sh — gives every global name outside the public API
# one internal prefix, hci_ ("hcmalloc internal"), so a program that links a
# stage statically cannot clash with os_map, pool_alloc, sc_table, tc_current
# and the rest (issue 15, "Symbols").
#
#   tools/rename_internal.sh --dry-run   what would change, file by file
#   tools/rename_internal.sh             rename in the working tree
#
# Run it once, from a clean tree, after the branches that touch these files
# are merged (it touches nearly every file), then build and test. The names:
# every symbol with external linkage that the allocator's objects define
# (nm -g on the stage libraries, common/ and the drop-in), minus the public
# API of common/hcmalloc.h, the two tool entry points the drop-in exports
# (hc_dump_heap_svg, hc_trace_write) and the malloc-family names. An
# internal name that starts with hc_ becomes hci_<rest>; any other gets
# hci_ in front (os_map -> hci_os_map). Whole words only, in code, build
# files and docs alike, so the docs keep naming what the code has. static
# and static inline names (fl_push, span_start, sc_index...) have no linkage
# and keep theirs. Names added after this list was made: add them below
# (nm -g --defined-only on bazel-bin/*/_objs/ lists them). Checked on the
# tree of 30 Nov 2026: after the rename, stage 4 and the drop-in compile and
# link with -Wl,-z,defs, and nm -D shows no internal name left unprefixed.
set -euo pipefail
cd "$(dirname "$0")/.."

NAMES=(
    # common/
    hc_fatal hc_fatal_pointer hc_fatal_pointer_why hc_warn
    hc_trace_add hc_trace_flush_hits hc_trace_pending_hits
    os_fail_maps_randomly os_fail_next_maps os_injected_failures os_map
    os_map_aligned os_mapped_bytes os_page_size os_release
    os_set_map_observer os_unmap
    pool_account_metadata pool_alloc pool_free pool_mapped_bytes
    sc_span_pages sc_table
    # layer 1 (thread cache)
    tc_budget_snapshot tc_collect_stats tc_current tc_flush_current
    tc_fork_lock tc_fork_unlock tc_free_without_cache tc_get_or_create
    tc_overflow tc_refill tc_sentinel
    # layer 2 (central cache)
    cc_bucket_lock cc_collect_stats cc_fetch cc_return
    cc_get_bucket_census cc_release_cached cc_transfer_capacity
    # layer 3 (page cache, page map, hooks)
    pc_alloc_span pc_alloc_span_aligned pc_check pc_collect_stats
    pc_fork_lock pc_fork_unlock pc_free_span pc_get_census pc_release_all
    pc_release_calls pc_grow_span_in_place pc_shrink_span_in_place
    pc_visit_spans
    pm_align_mask pm_ensure pm_get_usage pm_root pm_set pm_set_class_range
    pm_set_range
    hc_layer_on_malloc_slow hc_layer_release_free_memory
    # layer 4 (reclaim, options, stats, fork)
    hc_fork_child hc_fork_parent hc_fork_prepare hc_fork_register
    hc_format_stats hc_get_options hc_parse_size hc_print_stats
)

new_name() {
    case $1 in
        hc_*) echo "hci_${1#hc_}" ;;
        *) echo "hci_$1" ;;
    esac
}

dry_run=0
[[ "${1:-}" == "--dry-run" ]] && dry_run=1

script=$(mktemp)
trap 'rm -f "$script"' EXIT
for name in "${NAMES[@]}"; do
    echo "s/\\b$name\\b/$(new_name "$name")/g" >>"$script"
done

mapfile -t files < <(git ls-files -- '*.c' '*.h' '*.cc' '*.lds' '*.bzl' 'BUILD' '*/BUILD' '*.md' '*.sh' '*.py' |
    grep -v '^tools/rename_internal.sh$')
changed=0
for f in "${files[@]}"; do
    if ! sed -f "$script" "$f" | cmp -s - "$f"; then
        changed=$((changed + 1))
        if ((dry_run)); then
            echo "$f: $(sed -f "$script" "$f" | diff "$f" - | grep -c '^>') lines"
        else
            sed -i -f "$script" "$f"
        fi
    fi
done
echo "rename_internal: ${#NAMES[@]} names, $changed files $( ((dry_run)) && echo would change || echo changed)"
