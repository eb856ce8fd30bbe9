/* stage3_pagecache/layer_hooks.h — where stage 3's malloc.c calls the layer
 * above it (the list of these hooks: docs/design.md, "Layers and hooks"). Stage 3 defines them as nothing
 * (stage3_pagecache/layer_hooks.c); stage 4 compiles the same malloc.c by
 * label and links its own definitions (stage4_reclaim/layer_hooks.c). The
 * BUILD file picks the file: no weak symbols, and the diff between the two
 * layer_hooks.c is the whole of what stage 4 changes in the public API.
 * All are called off the fast path only (the sampling build's countdown,
 * below, aside). */
#ifndef HC_LAYER_HOOKS_H_
#define HC_LAYER_HOOKS_H_

#include "common/hcmalloc.h"

/* Every malloc slow path, after the calling thread's cache is published
 * (so anything the hook calls may re-enter malloc and find the cache). */
void hc_layer_on_malloc_slow(void);

/* The body of hc_release_free_memory: give free memory back to the OS. */
void hc_layer_release_free_memory(void);

/* The OS refused memory: give back what the allocator caches (this
 * thread's lists, the transfer caches, spare spans, and in stage 4 free
 * mappings) so that one retry can reuse it. Returns nonzero if the caller
 * should retry. Runs on the failing call's slow path, no lock held. */
int hc_layer_reclaim_for_retry(void);

/* hc_get_stats, after the layers below filled *out: the fields only a
 * later layer knows (the thread-cache budget, the heap limit). */
void hc_layer_collect_stats(hc_stats *out);

/* The body of hc_dump_heap_profile (stage 3 has no profiler: -1, ENOSYS). */
int hc_layer_dump_heap_profile(int fd);

/* ---- The sampling build (HC_SAMPLING=1) -------------------------------------------
 * Only stage 4's profiler library (libhcmalloc_profiler.so, the
 * :hcmalloc_profiler target) compiles malloc.c with HC_SAMPLING=1; every
 * other build has none of this, and its fast path is unchanged (the
 * same instructions as stage 3's). In the sampling build hc_malloc
 * first subtracts the request from this thread's countdown, one
 * thread-local subtract and a branch; when it goes below zero the request
 * may be sampled. A sampled block is given a large span of its own, marked
 * `sampled`, so that its page-map class is 0 and every free of it reaches
 * the large-block slow path, where the mark is read: unsampled frees of
 * small blocks never look (docs/profiling.md). */
#ifndef HC_SAMPLING
#define HC_SAMPLING 0
#endif

#if HC_SAMPLING
#include <stdint.h>

#include "common/compiler.h"
#include "stage1_threadcache/thread_cache.h" /* tc_self */

/* Bytes this thread may still allocate before its next sample point: the
 * word stage 1 keeps beside the thread's cache pointer for a later layer
 * (thread_cache.h's tc_self), so hc_malloc reaches both from one TLS
 * offset: a subtract and a branch, two instructions, not three. */
#define hc_sample_countdown (tc_self.layer_countdown)

/* The countdown went below zero in a request of `size` bytes: re-arms it and
 * returns 1 if the request is sampled (0: the thread's first request, or
 * profiling is off, which arms it out of reach). */
int hc_layer_sample_due(size_t size);

/* A sampled block was handed out (its span is marked): returns the
 * profiler's record of it, which the span keeps (span->sample_record) and
 * gives back when the block is freed: no table to search at the free. */
void *hc_layer_on_sampled_alloc(void *block, size_t size);
void hc_layer_on_sampled_free(void *block, void *record);
#endif

#endif /* HC_LAYER_HOOKS_H_ */
