/* stage4_reclaim/reclaim.h — what layer 4 adds to the thread cache's
 * interface: a view of the thread-cache budget (for stats and tests) and the
 * locks the fork handlers take. */
#ifndef HC_RECLAIM_H_
#define HC_RECLAIM_H_

#include <stddef.h>

typedef struct tc_budget_stats {
    size_t budget_bytes;    /* HCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES */
    size_t share_bytes;     /* given to live threads */
    size_t capacity_bytes;  /* of which reserved by their lists' limits */
    size_t unclaimed_bytes; /* held by no thread */
    size_t live_caches;     /* threads with a cache */
} tc_budget_stats;

void tc_budget_snapshot(tc_budget_stats *out);

/* Taken before fork() and released after it, in parent and child. */
void tc_fork_lock(void);
void tc_fork_unlock(void);

#endif /* HC_RECLAIM_H_ */
