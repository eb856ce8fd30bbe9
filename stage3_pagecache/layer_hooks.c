/* stage3_pagecache/layer_hooks.c — layer 3's definitions of the hooks its
 * malloc.c calls (layer_hooks.h).
 * May touch: the thread cache (tc_flush_current), the central cache
 * (cc_give_back_cached). */
#include "stage3_pagecache/layer_hooks.h"
#include "stage1_threadcache/thread_cache.h"
#include "stage3_pagecache/transfer_cache.h"

void hc_layer_on_malloc_slow(void) {}

/* What the central cache keeps for reuse (transfer caches, spare empty
 * spans) goes back to the page cache, where it merges. Stage 4 adds
 * returning memory to the OS. */
void hc_layer_release_free_memory(void) { cc_give_back_cached(); }

/* Out of memory: objects cached in this thread's lists and in the central
 * cache pin spans that, once empty, the page cache can split and merge for
 * the request that failed (glibc's tst-dynarray-fail: malloc_trim must not
 * be what makes the next call succeed). */
int hc_layer_reclaim_for_retry(void) {
    tc_flush_current();
    cc_give_back_cached();
    return 1;
}

/* The budget and the heap limit are stage 4's: their fields stay 0. */
void hc_layer_collect_stats(hc_stats *out) { (void)out; }
