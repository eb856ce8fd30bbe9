/* stage3_pagecache/central_shards.c — layer 2 on the page cache: the
 * central buckets themselves, CC_SHARDS of them per class
 * (transfer_cache.h), their set-up, and which shard each thread uses.
 * Apart from central_cache.c, which moves objects through the buckets, so
 * that a reader of the mechanism reads it alone.
 * May touch: the buckets' set-up (once, before any bucket is used); the
 * calling thread's shard (its own TLS byte, and the round-robin counter). */
#include <pthread.h>
#include <stdint.h>

#include "common/compiler.h"
#include "common/lock.h"
#include "common/size_class.h"
#include "stage2_centralcache/central_cache.h"
#include "stage3_pagecache/central_cache_internal.h"
#include "stage3_pagecache/span.h"
#include "stage3_pagecache/transfer_cache.h"

cc_bucket cc_buckets[CC_SHARDS][HC_NUM_CLASSES];
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
