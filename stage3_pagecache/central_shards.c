/* stage3_pagecache/central_shards.c — layer 2 on the page cache: the
 * central buckets themselves, CC_SHARDS of them per class
 * (transfer_cache.h), their set-up, which shard each thread uses, and
 * each shard's draw on the spares' total.
 * Apart from central_cache.c, which moves objects through the buckets, so
 * that a reader of the mechanism reads it alone.
 * May touch: the buckets' set-up (once, before any bucket is used); the
 * calling thread's shard (its own TLS byte, and the round-robin counter);
 * the spares' total and each shard's credit of it (atomics). */
#include <pthread.h>
#include <stdint.h>

#include "common/compiler.h"
#include "common/lock.h"
#include "common/size_class.h"
#include "stage2_centralcache/central_cache.h"
#include "stage3_pagecache/central_cache_internal.h"
#include "stage3_pagecache/page_cache.h"
#include "stage3_pagecache/span.h"
#include "stage3_pagecache/transfer_cache.h"

/* Each shard is a place of the page cache's: its spans, and their records,
 * lie together, apart from the other shards' (pc_alloc_span_placed). */
_Static_assert(CC_SHARDS <= PC_PLACES, "a place for every shard");

cc_bucket cc_buckets[CC_SHARDS][HC_NUM_CLASSES];
cc_shard_state cc_shard_states[CC_SHARDS];
cc_batch cc_bucket_rows[CC_SHARDS][HC_NUM_CLASSES][CC_TRANSFER_MAX_BATCHES];
static pthread_once_t cc_init_once = PTHREAD_ONCE_INIT;

static void cc_init(void) {
    for (unsigned shard = 0; shard < CC_SHARDS; shard++)
        for (unsigned cls = 0; cls < HC_NUM_CLASSES; cls++) {
            cc_bucket *bucket = &cc_buckets[shard][cls];
            hc_lock_init(&bucket->lock);
            bucket->size_class = (uint8_t)cls;
            span_list_init(&bucket->spans);
            span_list_init(&bucket->spares);
            bucket->batch_capacity = cls == 0 ? 0 : cc_transfer_capacity(cls);
            bucket->batches = cc_bucket_rows[shard][cls];
        }
}

/* 1 + the calling thread's shard; 0 until it first asks. */
static HC_THREAD_LOCAL uint8_t cc_thread_shard;
/* The shard the next thread to ask is given. */
static unsigned cc_next_shard;

unsigned cc_current_shard(void) {
    unsigned shard = cc_thread_shard;
    if (HC_UNLIKELY(shard == 0)) {
        shard = 1 + __atomic_fetch_add(&cc_next_shard, 1, __ATOMIC_RELAXED) % CC_SHARDS;
        cc_thread_shard = (uint8_t)shard;
    }
    return shard - 1;
}

/* Static zero-initialised mutexes are valid on glibc, but saying so
 * portably costs one pthread_once on the slow path. */
cc_bucket *cc_shard_bucket(unsigned shard, unsigned cls) {
    pthread_once(&cc_init_once, cc_init);
    return &cc_buckets[shard][cls];
}

cc_bucket *cc_bucket_of(unsigned cls) { return cc_shard_bucket(cc_current_shard(), cls); }

hc_lock *cc_bucket_lock(unsigned cls) { return &cc_bucket_of(cls)->lock; }

hc_lock *cc_shard_lock(unsigned shard, unsigned cls) { return &cc_shard_bucket(shard, cls)->lock; }

/* ---- The spares' total, drawn on in chunks --------------------------------
 * One counter for all classes and shards is what makes the worst case one
 * figure (CC_SPARE_BYTES_TOTAL), but a span that empties or is reused
 * changes it, and `hold` at two threads does that thousands of times a
 * round, from every thread of every shard: one line all of them write.
 * So each shard draws CC_SPARE_CREDIT_BYTES at a time and charges its
 * spares to that credit, on a line of its own; the total counts what the
 * shards have drawn, never less than what they keep, and each holds at
 * most twice the chunk unused. */

/* Bytes the shards have drawn from the total: their spares and credits. */
static struct {
    size_t bytes;
} HC_CACHE_ALIGNED cc_spares_drawn;

static size_t *cc_credit_of(const cc_bucket *bucket) {
    return &cc_shard_states[(size_t)(bucket - &cc_buckets[0][0]) / HC_NUM_CLASSES].spare_credit;
}

/* Draws `bytes` from the total: 1, or 0 and nothing drawn if it has no room. */
static int cc_spares_draw(size_t bytes) {
    if (__atomic_add_fetch(&cc_spares_drawn.bytes, bytes, __ATOMIC_RELAXED) <= CC_SPARE_BYTES_TOTAL)
        return 1;
    __atomic_sub_fetch(&cc_spares_drawn.bytes, bytes, __ATOMIC_RELAXED);
    return 0;
}

int cc_spare_charge(const cc_bucket *bucket, size_t bytes) {
    size_t *credit = cc_credit_of(bucket);
    size_t have = __atomic_load_n(credit, __ATOMIC_RELAXED);
    while (have >= bytes)
        if (__atomic_compare_exchange_n(credit, &have, have - bytes, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            return 1;
    /* A chunk, or near the total just what is asked. */
    if (bytes < CC_SPARE_CREDIT_BYTES && cc_spares_draw(CC_SPARE_CREDIT_BYTES)) {
        __atomic_add_fetch(credit, CC_SPARE_CREDIT_BYTES - bytes, __ATOMIC_RELAXED);
        return 1;
    }
    return cc_spares_draw(bytes);
}

void cc_spare_refund(const cc_bucket *bucket, size_t bytes) {
    size_t *credit = cc_credit_of(bucket);
    size_t have = __atomic_add_fetch(credit, bytes, __ATOMIC_RELAXED);
    while (have > 2 * CC_SPARE_CREDIT_BYTES)
        if (__atomic_compare_exchange_n(credit, &have, have - CC_SPARE_CREDIT_BYTES, 1, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
            __atomic_sub_fetch(&cc_spares_drawn.bytes, CC_SPARE_CREDIT_BYTES, __ATOMIC_RELAXED);
            return;
        }
}

size_t cc_spare_bytes_beyond_first(void) {
    size_t credits = 0;
    for (unsigned shard = 0; shard < CC_SHARDS; shard++)
        credits += __atomic_load_n(&cc_shard_states[shard].spare_credit, __ATOMIC_RELAXED);
    return __atomic_load_n(&cc_spares_drawn.bytes, __ATOMIC_RELAXED) - credits;
}
