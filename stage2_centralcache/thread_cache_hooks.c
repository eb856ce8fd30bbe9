/* stage2_centralcache/thread_cache_hooks.c — layer 2's definitions of the
 * hooks its list policy calls (thread_cache_hooks.h): a record from the
 * pool, stage 2's own caps on a list, any limit under them the policy asks
 * for, nothing to do at birth. Stage 4 links budget.c and thread_exit.c
 * instead.
 * May touch: the record pool. */
#include "stage2_centralcache/thread_cache_hooks.h"

#include "common/pool.h"

static hc_pool tc_record_pool = HC_POOL_INITIALIZER(sizeof(tc_policy_cache));

tc_cache *tc_layer_new_record(void) { return pool_alloc(&tc_record_pool); /* zeroed */ }

void tc_layer_cache_created(tc_cache *tc) { (void)tc; }

tc_list_bounds tc_layer_list_bounds(unsigned cls) {
    (void)cls;
    return TC_STAGE2_LIST_BOUNDS;
}

int tc_layer_may_raise_limit(tc_cache *tc, unsigned cls, uint32_t from, uint32_t to) {
    (void)tc, (void)cls, (void)from, (void)to;
    return 1;
}

void tc_layer_limit_lowered(tc_cache *tc, unsigned cls, uint32_t from, uint32_t to) {
    (void)tc, (void)cls, (void)from, (void)to;
}

int tc_layer_period_ends(tc_cache *tc, int visits_done) {
    (void)tc;
    return visits_done;
}
