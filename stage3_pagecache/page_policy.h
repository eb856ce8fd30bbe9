/* stage3_pagecache/page_policy.h — where the page cache calls the layer
 * above it: the policy that decides when free pages go back to the OS.
 *
 * The page cache (page_cache.c) calls the hooks below with its lock held:
 * before and after the calls that change its spans, and before it maps
 * more from the OS. Stage 3 links hooks that do nothing
 * (stage3_pagecache/page_policy.c: free pages stay backed for good); stage 4
 * links its release policy (stage4_reclaim/page_release.c). The BUILD file
 * picks the file, as for layer_hooks.h: no weak symbols, and the diff
 * between the two files is the lesson.
 *
 * The mechanism stays in the page cache, which alone may walk its free
 * spans: the policy asks how many free pages are backed and has some of
 * them released. */
#ifndef HC_PAGE_POLICY_H_
#define HC_PAGE_POLICY_H_

#include <stddef.h>

/* ---- Hooks: the page cache calls these, holding pc_lock --------------------- */

/* Once, before the page cache serves its first call. */
void pc_policy_init(void);

/* At the start of every page-cache call (span-sized work: grow, alloc,
 * free, resize in place), before it changes anything. */
void pc_policy_before_call(void);

/* At its end, the change made, the lock still held; a call that changed no
 * free span (it failed, or only mapped or unmapped a directly mapped block)
 * returns without it. */
void pc_policy_after_call(void);

/* Before the page cache maps `pages` more pages from the OS (a new region,
 * or a block mapped directly): 1 lets it, 0 refuses, and the call that
 * needed them fails with ENOMEM through the normal path (stage 4's heap
 * limit, HCMALLOC_HEAP_LIMIT_MB). `headroom`: the pages are more than the
 * request needs (a region's growth margin), so a refusal only shrinks the
 * region to the request, which is asked for next. pc_mapped_pages_locked()
 * is what is mapped already. */
int pc_policy_may_grow(size_t pages, int headroom);

/* Past how many bytes of heap a new region is made of whole huge pages
 * (page_cache.h, PC_HUGE_PAGE_BYTES); SIZE_MAX: never. The page cache asks
 * once, right after pc_policy_init, so the answer may come from options
 * that it read. */
size_t pc_policy_huge_heap_bytes(void);

/* ---- What the page cache offers a policy ------------------------------------- */

/* Free pages that may still be resident (free pages not yet released).
 * pc_lock held: for the hooks. */
size_t pc_backed_free_pages_locked(void);

/* Releases backed free spans, the longest first, until at least `want`
 * pages went back or none is left; returns the pages released. If the
 * kernel refuses, the pages simply stay backed. pc_lock held: for the hooks. */
size_t pc_release_free_pages_locked(size_t want);

/* The same from outside the page cache: takes the lock, releases, runs
 * pc_policy_after_call, and returns the bytes released. */
size_t pc_release_free_pages(size_t want);

/* Unmaps every free span (munmap) and forgets it: its address space goes
 * back too, not just its memory, for an address-space limit (RLIMIT_AS)
 * or a heap limit that counts mapped pages; a later request maps anew.
 * Returns the pages unmapped. pc_lock held: for the hooks. */
size_t pc_unmap_free_spans_locked(void);

/* The same from outside the page cache (takes the lock, runs
 * pc_policy_after_call); returns the bytes unmapped. */
size_t pc_unmap_free_spans(void);

/* Pages the page cache holds mapped from the OS now: its regions and its
 * directly mapped blocks (metadata not included; free pages released to the
 * OS still count, their addresses are kept). pc_lock held: for the hooks. */
size_t pc_mapped_pages_locked(void);

/* madvise calls made so far (0 for as long as no policy releases). */
size_t pc_release_calls(void);

#endif /* HC_PAGE_POLICY_H_ */
