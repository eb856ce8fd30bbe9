/* stage4_reclaim/profile_hooks.h — layer 4: the heap profiler's definitions
 * of stage 3's block hooks (stage3_pagecache/block_hooks.h, which lists
 * them). Only the profiler's library (:hcmalloc_profiler) has them: its
 * BUILD copts force this file into each of its sources (`-include`), ahead
 * of stage 3's malloc.c's own include of block_hooks.h, which the include
 * guard defined below then skips; diff this file against
 * stage3_pagecache/block_hooks.h, whose hooks do nothing.
 *
 * The countdown: the thread's hook word (stage1_threadcache/thread_cache.h,
 * tc_self.layer_word) holds the bytes it may still allocate before its next
 * sample point. hc_malloc subtracts each request from it, one subtract and
 * a branch beside the cache pointer's TLS offset; when it goes below zero,
 * the sampler (profile_sampler.c) re-arms it and says whether the request is
 * sampled. A sampled block gets a large span of its own, which keeps its
 * record (profile_table.c), so every free of it reaches stage 3's large-block
 * slow path, and an unsampled small block's free never looks
 * (docs/profiling.md).
 *
 * Forced in before a file's first line, it includes no libc header (those
 * would come before the file's own _GNU_SOURCE): <stddef.h> is the
 * compiler's, and intptr_t is spelled __INTPTR_TYPE__.
 * May touch: the thread's hook word, the sampler, the sample table. */
#ifndef HC_PROFILE_HOOKS_H_
#define HC_PROFILE_HOOKS_H_
#define HC_BLOCK_HOOKS_H_ /* these stand in for stage 3's no-op definitions */

#include <stddef.h>

#include "common/compiler.h"

enum { BLOCK_HOOKS_WATCH = 1 };

/* profile_sampler.c: the countdown went below zero in a request of `size`
 * bytes. Re-arms it; 1 if the request is sampled (0: the thread's first
 * request, or profiling is off, which arms it out of reach). */
int hc_profile_sample_due(size_t size);

/* profile_table.c: a sampled block was handed out; returns its record,
 * which its span keeps and gives back at the free (NULL: the sample was
 * dropped, no memory for its record). */
void *hc_profile_on_sampled_alloc(void *block, size_t size);
void hc_profile_on_sampled_free(void *block, void *record);

HC_INLINE int block_hook_due(__INTPTR_TYPE__ *layer_word, size_t size) {
    return (*layer_word -= (__INTPTR_TYPE__)size) < 0;
}

HC_INLINE int block_hook_choose(size_t size) { return hc_profile_sample_due(size); }

HC_INLINE void *block_hook_on_alloc(void *block, size_t size) {
    return hc_profile_on_sampled_alloc(block, size);
}

HC_INLINE void block_hook_on_free(void *block, void *record) { hc_profile_on_sampled_free(block, record); }

#endif /* HC_PROFILE_HOOKS_H_ */
