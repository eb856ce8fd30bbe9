/* stage3_pagecache/layer_hooks.h — where stage 3's malloc.c calls the layer
 * above it (the list of these hooks: docs/design.md, "Layers and hooks"). Stage 3 defines them as nothing
 * (stage3_pagecache/layer_hooks.c); stage 4 compiles the same malloc.c by
 * label and links its own definitions (stage4_reclaim/layer_hooks.c). The
 * BUILD file picks the file: no weak symbols, and the diff between the two
 * layer_hooks.c is the whole of what stage 4 changes in the public API.
 * All are called off the fast path only; the hooks a later layer needs on
 * the fast path are block_hooks.h's. */
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

#endif /* HC_LAYER_HOOKS_H_ */
