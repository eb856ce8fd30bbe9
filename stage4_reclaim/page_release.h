/* stage4_reclaim/page_release.h — what layer 4's release policy
 * (page_release.c) adds to the page cache's interface. The policy itself
 * needs no call: the page cache runs its hooks on every call it serves
 * (stage3_pagecache/page_policy.h, which also has pc_release_calls). */
#ifndef HC_PAGE_RELEASE_H_
#define HC_PAGE_RELEASE_H_

#include <stddef.h>

#include "stage3_pagecache/page_policy.h"

/* Releases every backed free span now (madvise MADV_DONTNEED, address range
 * kept), for hc_release_free_memory. Returns the bytes released. */
size_t pc_release_all(void);

/* HCMALLOC_HEAP_LIMIT_MB in bytes (0: no limit), and how many requests the
 * limit has refused so far (each failed with ENOMEM). Any thread. */
size_t pc_heap_limit_bytes(void);
size_t pc_heap_limit_refusals(void);

#endif /* HC_PAGE_RELEASE_H_ */
