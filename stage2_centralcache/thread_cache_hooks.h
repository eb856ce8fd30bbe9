/* stage2_centralcache/thread_cache_hooks.h — where layer 2's list policy
 * (thread_cache.c) calls the layer above it, and what it shares with it.
 *
 * The policy (slow start, ListTooLong, the scavenge) exists once, in
 * stage2_centralcache/thread_cache.c. It asks the hooks below before a list
 * may grow and tells them when one shrinks, when a cache is born and
 * whether a thread may have one. Stages 2 and 3 link the defaults
 * (stage2_centralcache/thread_cache_hooks.c: every growth allowed, nothing
 * to do at birth); stage 4 links its thread-cache budget
 * (stage4_reclaim/budget.c) and its thread-exit reclamation
 * (stage4_reclaim/thread_exit.c). The BUILD file picks the files, as for
 * stage3_pagecache/layer_hooks.h: no weak symbols. All hooks run in the
 * calling thread, on slow paths only. */
#ifndef HC_THREAD_CACHE_HOOKS_H_
#define HC_THREAD_CACHE_HOOKS_H_

#include <stddef.h>
#include <stdint.h>

#include "common/compiler.h"
#include "common/lock.h"
#include "stage1_threadcache/thread_cache.h"

/* One bit per size class. */
HC_INLINE void tc_class_set(uint64_t bits[2], unsigned cls) { bits[cls >> 6] |= (uint64_t)1 << (cls & 63); }
HC_INLINE void tc_class_clear(uint64_t bits[2], unsigned cls) { bits[cls >> 6] &= ~((uint64_t)1 << (cls & 63)); }

/* What layer 2 keeps per thread beside the lists: the registry's back link
 * and what the slow path learns about each list between visits. A layer
 * above extends it the same way (its record starts with this one). */
typedef struct tc_policy_cache {
    tc_cache base;                    /* first: a tc_policy_cache * is a tc_cache * */
    tc_cache *prev_cache;             /* the registry is doubly linked: O(1) unlink */
    uint32_t slow_calls;              /* slow-path visits since the last scavenge */
    uint8_t overages[HC_NUM_CLASSES]; /* overflows of lists[cls] since its limit last moved */
    uint64_t ran_dry[2];              /* bit cls: lists[cls] was refilled since the last scavenge */
    uint64_t used_classes[2];         /* bit cls: lists[cls] has a limit above 0 */
} tc_policy_cache;

HC_INLINE tc_policy_cache *tc_policy(tc_cache *tc) { return (tc_policy_cache *)tc; }

/* ---- Hooks: the list policy calls these ------------------------------------- */

/* A zeroed record for the calling thread's new cache, at least a
 * tc_policy_cache; NULL when the thread must work uncached (no memory, or
 * the layer above says so): its mallocs and frees then go straight to the
 * central cache. */
tc_cache *tc_layer_new_record(void);

/* The new cache is registered and published as tc_current. */
void tc_layer_cache_created(tc_cache *tc);

/* What lists[cls] may hold at most: thread_cache.c's tc_list_cap clamps
 * the class's cap to `bytes` of objects and to `length` objects (and to at
 * least a batch), and slow start never takes a limit past it. Stage 2's
 * lists have nothing else to bound what a thread keeps, so its answer is
 * TC_LIST_CAP_BYTES and TC_MAX_LIST_LENGTH for every class; a layer that
 * bounds all caches together (stage 4's budget) may let a list have more. */
#define TC_LIST_CAP_BYTES  ((size_t)1 << 20)
#define TC_MAX_LIST_LENGTH 8192u

typedef struct tc_list_bounds {
    size_t bytes;
    uint32_t length;
} tc_list_bounds;

/* Stage 2's own answer, for every class. */
#define TC_STAGE2_LIST_BOUNDS ((tc_list_bounds){TC_LIST_CAP_BYTES, TC_MAX_LIST_LENGTH})

tc_list_bounds tc_layer_list_bounds(unsigned cls);

/* lists[cls]'s limit may go from `from` up to `to` objects: 1 if it may, 0
 * if the layer above refuses (the limit stays). */
int tc_layer_may_raise_limit(tc_cache *tc, unsigned cls, uint32_t from, uint32_t to);

/* lists[cls]'s limit went down from `from` to `to` objects. */
void tc_layer_limit_lowered(tc_cache *tc, unsigned cls, uint32_t from, uint32_t to);

/* A slow-path visit; `visits_done`: the visits since the last scavenge
 * reached TC_SCAVENGE_PERIOD. Returns whether the period ends now (the
 * lists that did not run dry come back to this stage's cap, then the
 * scavenge). Stage 2 counts visits alone; a layer above may end a period
 * sooner, by a clock of its own. */
int tc_layer_period_ends(tc_cache *tc, int visits_done);

/* ---- What the list policy shares with the layer above ----------------------- */

/* Every live cache, doubly linked, for stats (and for the layer above, which
 * may unlink a cache whose thread is gone). The lock guards the links and
 * the count; it is taken to create a cache and for stats, never on a common
 * slow path. */
extern hc_lock tc_registry_lock;
extern tc_cache *tc_registry;
extern size_t tc_live_caches;

/* Unlinks `tc` from the registry (registry lock held). */
void tc_registry_unlink_locked(tc_cache *tc);

/* Gives every cached object of `tc` back to the central cache and lowers
 * every limit to 0 (through tc_layer_limit_lowered). The caller owns `tc`:
 * its thread, or a thread that is reclaiming a dead one's cache. */
void tc_flush(tc_cache *tc);

/* Gives back what each list of `tc` holds above the cap that `bounds`
 * allow (tc_list_cap's, with these bounds in place of the layer's), and
 * lowers its limit to that cap. The caller owns `tc`. */
void tc_trim(tc_cache *tc, tc_list_bounds bounds);

#endif /* HC_THREAD_CACHE_HOOKS_H_ */
