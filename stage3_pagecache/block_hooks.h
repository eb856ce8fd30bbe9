/* stage3_pagecache/block_hooks.h — layer 3: where hc_malloc and hc_free let
 * a later layer watch blocks it chooses, and stage 3's definitions of those
 * hooks: none is ever chosen, and the compiler removes every call.
 *
 * The points (stage3_pagecache/malloc.c):
 *   block_hook_due     hc_malloc's fast path, every request: nonzero sends
 *                      the request to the slow path's block_hook_choose.
 *                      It is given the thread's hook word (thread_cache.h's
 *                      tc_self.layer_word), one TLS offset with the cache.
 *   block_hook_choose  the request is to be watched: then it gets a large
 *                      span of its own whatever its size, so that its free
 *                      reaches large_free, the one place a watched block's
 *                      free is looked for (a small block's free never looks);
 *   block_hook_on_alloc   such a block was handed out: returns the layer's
 *                         record of it, which its span keeps (span.h's
 *                         layer_record, NULL for every other block);
 *   block_hook_on_free    such a block is being freed, before its pages go.
 * BLOCK_HOOKS_WATCH says whether any block can be watched: 0 here, so
 * hc_free_sized trusts the size and large_free never reads the record.
 *
 * A library whose layer watches blocks (stage 4's heap profiler,
 * :hcmalloc_profiler) compiles with its own definitions forced in first
 * (`-include` in its BUILD copts: stage4_reclaim/profile_hooks.h), which
 * define this file's include guard too, so this file is then skipped. The
 * BUILD file picks the hooks, as it picks layer_hooks.c and page_policy.c;
 * these are a header because block_hook_due is on the fast path.
 * May touch: nothing. */
#ifndef HC_BLOCK_HOOKS_H_
#define HC_BLOCK_HOOKS_H_

#include <stddef.h>
#include <stdint.h>

#include "common/compiler.h"

enum { BLOCK_HOOKS_WATCH = 0 };

HC_INLINE int block_hook_due(intptr_t *layer_word, size_t size) {
    (void)layer_word;
    (void)size;
    return 0;
}

HC_INLINE int block_hook_choose(size_t size) {
    (void)size;
    return 0;
}

HC_INLINE void *block_hook_on_alloc(void *block, size_t size) {
    (void)block;
    (void)size;
    return NULL;
}

HC_INLINE void block_hook_on_free(void *block, void *record) {
    (void)block;
    (void)record;
}

#endif /* HC_BLOCK_HOOKS_H_ */
