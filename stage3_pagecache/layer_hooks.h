/* stage3_pagecache/layer_hooks.h — the two places where stage 3's malloc.c
 * calls the layer above it. Stage 3 defines them as nothing
 * (stage3_pagecache/layer_hooks.c); stage 4 compiles the same malloc.c by
 * label and links its own definitions (stage4_reclaim/layer_hooks.c). The
 * BUILD file picks the file: no weak symbols, and the diff between the two
 * layer_hooks.c is the whole of what stage 4 changes in the public API.
 * Both are called off the fast path only. */
#ifndef HC_LAYER_HOOKS_H_
#define HC_LAYER_HOOKS_H_


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

#endif /* HC_LAYER_HOOKS_H_ */
