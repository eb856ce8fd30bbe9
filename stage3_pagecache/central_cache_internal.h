/* stage3_pagecache/central_cache_internal.h — layer 2 on the page cache:
 * the buckets' state, shared by the central cache itself (central_cache.c,
 * and transfer_cache.c: the stack of batches in front of the spans), the
 * buckets' set-up and shards (central_shards.c) and its read-only views and
 * checks (central_cache_check.c: the census, the stats, the hardened
 * build's chain check). No other file includes it:
 * everyone else goes through stage2_centralcache/central_cache.h. A
 * bucket's fields are guarded by its lock. */
#ifndef HC_CENTRAL_CACHE_INTERNAL_H_
#define HC_CENTRAL_CACHE_INTERNAL_H_

#include <stddef.h>
#include <stdint.h>

#include "common/compiler.h"
#include "common/lock.h"
#include "common/size_class.h"
#include "common/trace.h"
#include "stage3_pagecache/span.h"
#include "stage3_pagecache/transfer_cache.h"

/* One whole batch in a transfer cache, kept as a row of pointers: its
 * objects' addresses, objects[skip..skip + count), in the order they are
 * linked (each object's link still leads to the next, as the thread cache
 * gave them back; the last one's link is not necessarily NULL). The row
 * gives a fetch both ends of what it takes without a walk, and every
 * address at once, so the objects can be brought into the fetching core's
 * cache together rather than one link at a time (cc_fetch). */
typedef struct cc_batch {
    uint32_t count;
    uint32_t skip; /* objects a fetch of less than a batch already took */
    void *objects[HC_MAX_BATCH];
} cc_batch;

/* Aligned (and so padded) to a cache line: two hot buckets side by side
 * would otherwise share a line, and each lock taken on one would evict the
 * other from every other core's cache (false sharing). */
typedef struct cc_bucket {
    hc_lock lock;
    uint8_t size_class;        /* its class, which the trace build counts its lock under */
    uint32_t batch_count;      /* transfer cache: batches[0..batch_count) */
    uint32_t batch_capacity;   /* cc_transfer_capacity */
    size_t transfer_objects;   /* in those batches, for stats */
    hc_span spans;             /* sentinel: this class's spans in use that have free objects */
    hc_span spares;            /* sentinel: its spans with every object free, the newest first */
    size_t free_objects;       /* on both lists, for stats and cc_fetch's peek */
    size_t span_bytes;         /* in spans this class holds now */
    size_t empty_spans;        /* on the spares list */
    size_t fetched_at;         /* cc_carved_pages at its last fetch: the idle sweep's clock (atomic) */
    uint8_t touched;           /* ever fetched from (the idle sweep skips the others) */
    cc_batch *batches;         /* its CC_TRANSFER_MAX_BATCHES rows, in cc_bucket_rows */
} HC_CACHE_ALIGNED cc_bucket;

/* The transfer caches' rows, apart from the buckets: setting up every
 * bucket writes its first line, and with the rows inside, that line was a
 * page of its own for each of the CC_SHARDS x HC_NUM_CLASSES buckets (34
 * KiB apart), 1.5 MiB resident in every process. Apart, the set-up writes
 * a few pages of bucket heads, and a transfer cache's pages are touched
 * only when its class uses them. */
extern cc_batch cc_bucket_rows[CC_SHARDS][HC_NUM_CLASSES][CC_TRANSFER_MAX_BATCHES];

/* cc_buckets[shard][cls]: each class's CC_SHARDS buckets (transfer_cache.h). */
extern cc_bucket cc_buckets[CC_SHARDS][HC_NUM_CLASSES];

/* What each shard keeps of its own beyond its buckets, on a line of its
 * own: its credit of the spares' total (atomic). (Where its next span goes
 * is the page cache's: each shard is a place, pc_alloc_span_placed.) */
typedef struct cc_shard_state {
    size_t spare_credit; /* of the spares' total, drawn and not yet used (cc_spare_charge) */
} HC_CACHE_ALIGNED cc_shard_state;
extern cc_shard_state cc_shard_states[CC_SHARDS];

/* The spares' total for all classes (CC_SPARE_BYTES_TOTAL): a spare beyond
 * its bucket's first is charged `bytes` against it, 1 if the total has
 * room, else 0 (nothing charged); a refund gives them back. Under the
 * bucket's lock, but other shards' buckets charge the same total
 * (central_shards.c: each shard draws on it in chunks). */
int cc_spare_charge(const cc_bucket *bucket, size_t bytes);
void cc_spare_refund(const cc_bucket *bucket, size_t bytes);
/* What a shard draws from the total at a time (it keeps at most two unused). */
#define CC_SPARE_CREDIT_BYTES ((size_t)256 << 10)

/* The calling thread's bucket of class `cls` (the buckets are set up on the
 * first call into the central cache). */
cc_bucket *cc_bucket_of(unsigned cls);

/* Bucket `shard` of class `cls`, set up like cc_bucket_of's. */
cc_bucket *cc_shard_bucket(unsigned shard, unsigned cls);

/* Takes a bucket's lock, counted per class by the trace build. */
HC_INLINE void cc_lock_bucket(cc_bucket *bucket) { HC_TRACE_LOCK_ACQUIRE(&bucket->lock, bucket->size_class); }

/* Pages of the spans carved so far (atomic): the clock of the idle sweep,
 * which gives back what a class caches once this many pages have been
 * carved since its last fetch (CC_SWEEP_PAGES). */
extern size_t cc_carved_pages;

/* A fetch came to the bucket (its lock held): not idle until CC_SWEEP_PAGES
 * more pages are carved. The bucket is `touched` from then on: it may hold what
 * the idle sweep must see. Only a fetch makes it so: objects come home to
 * a bucket only from spans a fetch there carved. The sweep reads `touched`
 * without the lock, and most buckets (classes a shard's threads never use)
 * stay untouched and unvisited. */
HC_INLINE void cc_note_fetched(cc_bucket *bucket) {
    __atomic_store_n(&bucket->fetched_at, __atomic_load_n(&cc_carved_pages, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
    if (!__atomic_load_n(&bucket->touched, __ATOMIC_RELAXED))
        __atomic_store_n(&bucket->touched, 1, __ATOMIC_RELAXED);
}

/* free_objects changes under the lock, and cc_fetch peeks at it without
 * (as at batch_count, below): every store is atomic. */
HC_INLINE void cc_add_free_objects(cc_bucket *bucket, long delta) {
    __atomic_store_n(&bucket->free_objects, bucket->free_objects + (size_t)delta, __ATOMIC_RELAXED);
}

/* batch_count changes under the lock, but cc_return peeks at it without:
 * every store is atomic so that the peek is not a data race. */
HC_INLINE void cc_set_batch_count(cc_bucket *bucket, uint32_t count) {
    __atomic_store_n(&bucket->batch_count, count, __ATOMIC_RELAXED);
}

/* ---- The transfer cache (transfer_cache.c) ---------------------------------- */

/* Pushes whole batches of the chain first.. (*n objects of class `cls`) on
 * the bucket's transfer cache while it has room, each with its row read off
 * the links; takes the lock once for up to CC_TRIP_MAX_BATCHES of them.
 * Returns the first object of what is left, *n how many (they go to the
 * spans). */
void *cc_transfer_return(cc_bucket *bucket, unsigned cls, void *first, uint32_t *n);

/* Pops up to `want` objects off the top batches, at most
 * CC_TRIP_MAX_BATCHES of them (the front of the last one's row, when it
 * holds more than is wanted), their addresses into `objects` in chain order
 * and where each batch's row ends into `row_ends` (*rows of them); the
 * bucket lock is held. Returns how many, 0 when the transfer cache is
 * empty. Copying pointers is all it does: no object is read or written
 * under the lock. The rows are linked into one chain afterwards, with no
 * lock held, by cc_link_rows. */
uint32_t cc_transfer_pop(cc_bucket *bucket, uint32_t want, void **objects, uint32_t *row_ends, uint32_t *rows);

/* Links the rows cc_transfer_pop took into one NULL-terminated chain: each
 * row's objects are still linked to each other, so only the last object of
 * each row gets a link written. No lock held: they are the caller's now. */
void cc_link_rows(void *const *objects, const uint32_t *row_ends, uint32_t rows);

/* Loads the link word of each of `n` objects, in the order given; no lock
 * held. A batch from the transfer cache was last written by the thread
 * that gave it back, often on another core: followed link by link (each
 * malloc's pop), every object is a miss that starts only when the one
 * before it has arrived. With the addresses in hand the loads are
 * independent, so the core keeps as many in flight as it can, and the pops
 * find the lines here. Loads, not prefetches: a prefetch is a hint the core
 * may drop, and with a trip's 512 issued at once the pops still waited on
 * each line. */
void cc_pull_objects(void *const *objects, uint32_t n);

/* Takes up to `max` batches off the top of the transfer cache (the bucket
 * lock is held): each one's first object into `firsts` and its count into
 * `counts`; returns how many batches. A batch's objects are still linked
 * to each other, the chain cc_return_to_spans follows. */
uint32_t cc_transfer_take_top(cc_bucket *bucket, uint32_t max, void **firsts, uint32_t *counts);

/* Hardened build: every object of the chain first.. (n objects) starts an
 * object of class `cls` in one of its small spans, or the program stops.
 * Nothing in the default build. */
void cc_check_chain(unsigned cls, void *first, uint32_t n);

#endif /* HC_CENTRAL_CACHE_INTERNAL_H_ */
