/* stage4_reclaim/profile_table.c — layer 4, the heap profiler: the records
 * of what was sampled, and the two hooks that keep them.
 *
 * One bucket per (stack, size), counting sampled allocations and frees,
 * from common/pool.h, and one record per live sampled block (its address
 * and bucket, on a list the leak check scans); a sampled block's span keeps
 * its record (span.h's layer_record), so its free finds the bucket and
 * searches nothing. Two locks, taken only by sampled allocations and frees
 * (one sample per 2 MiB allocated, by default): profile_lock for the bucket
 * table (allocations), profile_blocks_lock for the list of live blocks
 * (allocations and frees). Dumps do without them (buckets are never freed,
 * and are published and counted with atomics: profile_internal.h): a dump
 * takes milliseconds, and every thread's next sample would wait.
 * May touch: common/pool.h, common/lock.h, profile_stack.c (the stack). */
#include <stdint.h>
#include <string.h>

#include "common/lock.h"
#include "common/pool.h"
#include "stage4_reclaim/profile_hooks.h"
#include "stage4_reclaim/profile_internal.h"

#define BUCKET_HEADS 4096

hc_lock profile_lock = HC_LOCK_INITIALIZER;
static hc_pool stack_pool = HC_POOL_INITIALIZER(sizeof(stack_record));
static hc_pool bucket_pool = HC_POOL_INITIALIZER(sizeof(bucket));
static hc_pool block_pool = HC_POOL_INITIALIZER(sizeof(sampled_block));
/* The live sampled blocks, under profile_blocks_lock: a lock of their own,
 * so that sampled frees, which take it, never wait for a sampled
 * allocation's bucket search (profile_lock). Taken after profile_lock
 * where both are. */
hc_lock profile_blocks_lock = HC_LOCK_INITIALIZER;
sampled_block *profile_live_blocks;
/* Under profile_lock. Static, untouched until used: no start-up cost.
 * Stacks and buckets are never freed; a record joins its chain's head
 * (profile_stack_heads, bucket_heads, its stack's buckets) with a
 * store-release, after its fields: dumps walk profile_stack_heads and the stacks'
 * buckets with acquire loads and no lock. */
stack_record *profile_stack_heads[STACK_HEADS];
static bucket *bucket_heads[BUCKET_HEADS];
size_t profile_samples, profile_dropped;
size_t profile_live_samples;

static stack_record *stack_for(const stack_walk *w, uint64_t h) {
    stack_record **head = &profile_stack_heads[h % STACK_HEADS];
    for (stack_record *st = *head; st != NULL; st = st->next)
        if (st->hash == h && st->depth == w->depth &&
            memcmp(st->pcs, w->pcs, (size_t)w->depth * sizeof w->pcs[0]) == 0)
            return st;
    stack_record *st = pool_alloc(&stack_pool);
    if (st == NULL)
        return NULL;
    st->hash = h;
    st->depth = w->depth;
    memcpy(st->pcs, w->pcs, (size_t)w->depth * sizeof w->pcs[0]);
    st->next = *head;
    __atomic_store_n(head, st, __ATOMIC_RELEASE);
    return st;
}

/* The bucket of (stack, size). profile_lock held. */
static bucket *bucket_for(const stack_walk *w, size_t size) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < w->depth; i++)
        h = (h ^ w->pcs[i]) * 0x100000001b3ull;
    uint64_t hs = (h ^ size) * 0x100000001b3ull;
    bucket **head = &bucket_heads[hs % BUCKET_HEADS];
    for (bucket *b = *head; b != NULL; b = b->next)
        if (b->size == size && b->stack->hash == h && b->stack->depth == w->depth &&
            memcmp(b->stack->pcs, w->pcs, (size_t)w->depth * sizeof w->pcs[0]) == 0)
            return b;
    stack_record *st = stack_for(w, h);
    bucket *b = st != NULL ? pool_alloc(&bucket_pool) : NULL;
    if (b == NULL)
        return NULL;
    b->stack = st;
    b->size = size;
    b->next = *head;
    b->next_of_stack = st->buckets;
    __atomic_store_n(head, b, __ATOMIC_RELEASE);
    __atomic_store_n(&st->buckets, b, __ATOMIC_RELEASE);
    return b;
}

int profile_unwinder_primed;

void *hc_profile_on_sampled_alloc(void *block, size_t size) {
    stack_walk w;
    w.depth = 0; /* not the frames: zeroing them was a tenth of a sample's time */
    /* Before the library's constructor primed the unwinder (the loader's
     * own first mallocs) a sample keeps no stack rather than risk it. */
    if (__atomic_load_n(&profile_unwinder_primed, __ATOMIC_ACQUIRE))
        profile_take_stack(&w); /* before the lock: the unwinder takes the loader's */
    hc_lock_acquire(&profile_lock);
    profile_samples++;
    bucket *b = bucket_for(&w, size);
    sampled_block *r = b != NULL ? pool_alloc(&block_pool) : NULL;
    if (r == NULL) {
        profile_dropped++;
    } else {
        r->bucket = b;
        r->start = (uintptr_t)block;
        __atomic_store_n(&b->allocs, b->allocs + 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&profile_live_samples, 1, __ATOMIC_RELAXED);
    }
    hc_lock_unlock(&profile_lock);
    if (r != NULL) {
        hc_lock_acquire(&profile_blocks_lock);
        r->prev = NULL;
        r->next = profile_live_blocks;
        if (profile_live_blocks != NULL)
            profile_live_blocks->prev = r;
        profile_live_blocks = r;
        hc_lock_unlock(&profile_blocks_lock);
    }
    return r;
}

/* The bucket's count needs no lock (the bucket never goes away); the list
 * does. Called before the block's pages go back (stage 3's large_free), so
 * a leak scan, which holds profile_blocks_lock, reads no block that is
 * being freed. */
void hc_profile_on_sampled_free(void *block, void *record) {
    (void)block;
    sampled_block *r = record;
    if (r == NULL)
        return; /* its sample was dropped (no memory for its records) */
    hc_lock_acquire(&profile_blocks_lock);
    if (r->prev != NULL)
        r->prev->next = r->next;
    else
        profile_live_blocks = r->next;
    if (r->next != NULL)
        r->next->prev = r->prev;
    hc_lock_unlock(&profile_blocks_lock);
    __atomic_add_fetch(&r->bucket->frees, 1, __ATOMIC_RELEASE);
    __atomic_sub_fetch(&profile_live_samples, 1, __ATOMIC_RELAXED);
    pool_free(&block_pool, r);
}
