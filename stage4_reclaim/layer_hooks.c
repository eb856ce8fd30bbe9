/* stage4_reclaim/layer_hooks.c — layer 4's definitions of the hooks stage
 * 3's malloc.c calls (stage3_pagecache/layer_hooks.h). Stage 4 compiles
 * stage 3's malloc.c unchanged, by label; this file holds all that layer 4
 * changes in the public API.
 *
 * What changed from stage 3 (diff this file against
 * stage3_pagecache/layer_hooks.c):
 *   - the malloc slow path registers the fork handlers (fork.c), so every
 *     program linked with stage 4 is fork-safe;
 *   - hc_release_free_memory flushes the calling thread's cache and the
 *     parked caches of exited threads (thread_exit.c), gives what
 *     the central cache keeps back to the page cache (as stage 3 does), and
 *     every free page of the page cache back to the OS (pc_release_all);
 *   - hc_get_stats adds the thread-cache budget and the heap limit (the
 *     page cache fills released_bytes once stage 4's release policy,
 *     page_release.c, gives pages back);
 *   - out of memory, the retry first gets everything hc_release_free_memory
 *     gives back, and the free spans' address space (unmapped).
 * May touch: the thread cache (tc_flush_current), the central cache
 * (cc_give_back_cached), the page cache (pc_release_all, pc_unmap_free_spans),
 * fork.c. */
#include "common/harden_guard.h"
#include "stage1_threadcache/thread_cache.h"
#include "stage3_pagecache/layer_hooks.h"
#include "stage3_pagecache/transfer_cache.h"
#include "stage4_reclaim/page_release.h"
#include "stage4_reclaim/reclaim.h"

/* After tc_current is published: pthread_atfork may malloc. Returns at once
 * after the first call. */
void hc_layer_on_malloc_slow(void) { hc_fork_register(); }

void hc_layer_release_free_memory(void) {
    /* The caller's cached objects first: the spans they pin may then go
     * back to the page cache, and out to the OS with the rest. */
    tc_flush_current();
    tc_reclaim_parked(); /* exited threads' caches kept for new ones */
    cc_give_back_cached();
    pc_release_all();
}

/* Out of memory: what hc_release_free_memory gives back, except that the
 * page cache's free spans are unmapped (pc_unmap_free_spans), not just
 * released. A release keeps the address range, and an address-space limit
 * (RLIMIT_AS) and the heap limit both count it: the retry's new mapping (a
 * pool chunk for span records, a region, a direct map) would find no room,
 * and memory freed as large blocks would never come back as small ones.
 * Only here, where the OS already said no: elsewhere a free range kept
 * mapped is reused without a system call. */
int hc_layer_reclaim_for_retry(void) {
    tc_flush_current();
    cc_give_back_cached();
    pc_unmap_free_spans();
    harden_guarded_drain(); /* the hardened build's freed guarded blocks (common/harden_guard.h) */
    return 1;
}

void hc_layer_collect_stats(hc_stats *out) {
    tc_budget_stats budget;
    tc_budget_snapshot(&budget);
    out->thread_cache_budget_bytes = budget.budget_bytes;
    out->heap_limit_bytes = pc_heap_limit_bytes();
    out->heap_limit_hits = pc_heap_limit_refusals();
}
