/* common/namespace.h — hcmalloc's private namespace (layer: all; touches
 * nothing). Every name with external linkage outside the public API
 * (common/hcmalloc.h) is defined here to an hci_ ("hcmalloc internal")
 * spelling, so a program that links a stage statically cannot clash with
 * os_map, pool_alloc, sc_table, tc_current and the rest, while the source
 * keeps the per-layer names students read (tc_refill, cc_fetch, pc_*).
 * jemalloc's private namespace works the same way.
 *
 * common/compiler.h includes this first, and every allocator file includes
 * compiler.h (directly or through its layer's header) before it names one of
 * these. To add a global: add its line here; tests/symbols_test.sh fails
 * until you do (it lists every defined global of each stage's archive that
 * is neither public API nor hci_). static names have no linkage: leave
 * them out. */
#ifndef HC_NAMESPACE_H_
#define HC_NAMESPACE_H_


/* common/ */
#define hc_fatal hci_fatal
#define hc_fatal_pointer hci_fatal_pointer
#define hc_fatal_pointer_why hci_fatal_pointer_why
#define hc_warn hci_warn
#define hc_lock_acquire_at hci_lock_acquire_at
#define hc_lock_fork_owner hci_lock_fork_owner
#define hc_lock_release_at hci_lock_release_at
#define hc_trace_add hci_trace_add
#define hc_trace_flush_hits hci_trace_flush_hits
#define hc_trace_pending_hits hci_trace_pending_hits
#define os_fail_maps_randomly hci_os_fail_maps_randomly
#define os_fail_next_maps hci_os_fail_next_maps
#define os_injected_failures hci_os_injected_failures
#define os_map hci_os_map
#define os_map_aligned hci_os_map_aligned
/* Function-like: struct hc_stats has a field of this name, which stays. */
#define os_mapped_bytes(...) hci_os_mapped_bytes(__VA_ARGS__)
#define os_page_size hci_os_page_size
#define os_release hci_os_release
#define os_set_map_observer hci_os_set_map_observer
#define os_unmap hci_os_unmap
#define pool_account_metadata hci_pool_account_metadata
#define pool_alloc hci_pool_alloc
#define pool_free hci_pool_free
#define pool_mapped_bytes hci_pool_mapped_bytes
#define sc_span_pages hci_sc_span_pages
#define sc_table hci_sc_table

/* layer 1: thread cache */
#define tc_budget_snapshot hci_tc_budget_snapshot
#define tc_collect_stats hci_tc_collect_stats
#define tc_current hci_tc_current
#define tc_flush_current hci_tc_flush_current
#define tc_fork_lock hci_tc_fork_lock
#define tc_fork_unlock hci_tc_fork_unlock
#define tc_free_without_cache hci_tc_free_without_cache
#define tc_get_or_create hci_tc_get_or_create
#define tc_overflow hci_tc_overflow
#define tc_refill hci_tc_refill
#define tc_sentinel hci_tc_sentinel

/* layer 2: central cache */
#define cc_bucket_lock hci_cc_bucket_lock
#define cc_collect_stats hci_cc_collect_stats
#define cc_fetch hci_cc_fetch
#define cc_return hci_cc_return
#define cc_get_bucket_census hci_cc_get_bucket_census
#define cc_release_cached hci_cc_release_cached
#define cc_transfer_capacity hci_cc_transfer_capacity

/* layer 3: page cache, page map, hooks */
#define pc_alloc_span hci_pc_alloc_span
#define pc_alloc_span_aligned hci_pc_alloc_span_aligned
#define pc_check hci_pc_check
#define pc_collect_stats hci_pc_collect_stats
#define pc_fork_lock hci_pc_fork_lock
#define pc_fork_unlock hci_pc_fork_unlock
#define pc_free_span hci_pc_free_span
#define pc_get_census hci_pc_get_census
#define pc_release_all hci_pc_release_all
#define pc_release_calls hci_pc_release_calls
#define pc_grow_span_in_place hci_pc_grow_span_in_place
#define pc_shrink_span_in_place hci_pc_shrink_span_in_place
#define pc_visit_spans hci_pc_visit_spans
#define pm_align_mask hci_pm_align_mask
#define pm_ensure hci_pm_ensure
#define pm_get_usage hci_pm_get_usage
#define pm_root hci_pm_root
#define pm_set hci_pm_set
#define pm_set_class_range hci_pm_set_class_range
#define pm_set_range hci_pm_set_range
#define hc_layer_on_malloc_slow hci_layer_on_malloc_slow
#define hc_layer_release_free_memory hci_layer_release_free_memory
#define hc_layer_reclaim_for_retry hci_layer_reclaim_for_retry

/* layer 4: reclaim, options, stats, fork */
#define hc_fork_child hci_fork_child
#define hc_fork_parent hci_fork_parent
#define hc_fork_prepare hci_fork_prepare
#define hc_fork_register hci_fork_register
#define hc_format_stats hci_format_stats
#define hc_get_options hci_get_options
#define hc_parse_size hci_parse_size
#define hc_print_stats hci_print_stats

#endif /* HC_NAMESPACE_H_ */
