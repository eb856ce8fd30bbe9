/* stage3_pagecache/transfer_cache.h — what layer 3 adds to the central
 * cache's interface (central_cache.h, stage 2's, is unchanged).
 *
 * The transfer cache: each central bucket keeps, beside its spans, a small
 * stack of whole batches that thread caches gave back, each a row of its
 * objects' addresses (central_cache_internal.h, cc_batch). cc_return of
 * whole batches pushes them there and cc_fetch pops them, up to a trip of
 * CC_TRIP_MAX_BATCHES each, both without reading a span or the page map: a
 * batch one thread frees goes to the next thread that asks, intact, under
 * one short lock hold that copies pointers. The
 * row is read off the chain by the thread that gives it back (whose cache
 * holds those links), and the thread that fetches it has every address at
 * once: it asks for all the objects' cache lines together, instead of
 * waiting for one miss per object as its refill and mallocs follow the
 * links, and it cuts part of a batch without a walk. Only when
 * the stack is full (cc_return) or empty (cc_fetch) do objects go to or come
 * from their spans, one by one (object -> span through the page map, the
 * span's free list, its reference count), and then the lookups are done
 * before the bucket lock is taken. A span whose last object comes home
 * stays in its bucket as one of the class's spares (up to
 * CC_EMPTY_BYTES_KEPT, and CC_SPARE_BYTES_TOTAL for all classes) instead of going straight back to the page cache, so
 * a producer/consumer pair does not carve and return the same span over
 * and over; a spare is carved again from its first slot, its freed order
 * forgotten. A class idle while the heap grows gives both back
 * (CC_SWEEP_PAGES).
 * May touch: nothing; central_cache.c implements it. */
#ifndef HC_TRANSFER_CACHE_H_
#define HC_TRANSFER_CACHE_H_


#include <stddef.h>
#include <stdint.h>

#include "common/lock.h"

/* Shards: each class has CC_SHARDS buckets, each with its own lock,
 * transfer cache, spans and spares. A thread uses one of them for all its
 * fetches and returns (cc_current_shard: given round robin when the thread
 * first reaches the central cache), and a span belongs to the shard that
 * carved it (span.h, `shard`), among that shard's other spans in the
 * address space (pc_alloc_span_placed). Objects given back go home to
 * their span's shard, whoever frees them: whole batches to its transfer
 * cache (the batch's first object decides), the rest to the spans. So a
 * thread that frees what it allocated (most threads, most of the time)
 * fetches back its own objects, from its own pages, under a lock no other
 * thread takes: with one bucket per class, two threads of the bench's
 * `hold` swapped their objects through it, each refill taking lines the
 * other core had just written. A consumer thread's frees reach their
 * producer as rows of pointers in the producer's own transfer cache, under
 * one lock a trip. A fetch that finds nothing in its own shard takes from
 * another shard's transfer cache only when that one is full (its threads
 * stopped fetching), else carves. How many:
 * enough that two threads, or a program's main thread and two workers,
 * never share one; more threads than shards share them round robin, each
 * bucket lock seeing its share of what one lock per class saw. */
#define CC_SHARDS 4

/* The shard the calling thread's fetches and returns use. */
unsigned cc_current_shard(void);

/* Bucket `shard`'s lock of class `cls` (stage 2's cc_bucket_lock is the
 * calling thread's): fork takes every one. */
hc_lock *cc_shard_lock(unsigned shard, unsigned cls);

/* The bytes of objects a class's transfer cache may hold, and the whole
 * batches it holds at most. The bytes decide for every class from 64 B up;
 * below, the batches do, and they bound how many objects of a tiny class
 * (and so how many of its spans, each kept from the page cache by one
 * object) a class may pin, to CC_TRANSFER_MAX_BATCHES x HC_MAX_BATCH. At
 * 64 batches the count decided for
 * every class under 128 B: a 64 B class held 2,048 objects, and a consumer
 * that frees a producer's 4,096 in one burst (the bench's xthread,
 * mimalloc-bench's xmalloc-test) sent half of each burst to the spans,
 * and the producer's refills carved them out again. */
#define CC_TRANSFER_MAX_BYTES   ((size_t)256 << 10)
#define CC_TRANSFER_MAX_BATCHES 128

/* Whole batches one trip to the transfer cache moves under one hold of the
 * bucket lock (cc_trip_batches): a refill pops up to this many, a list that
 * overflows pushes as many, so a thread whose list may hold several batches
 * takes the lock once for all of them. One batch a trip (stage 2's answer)
 * made a producer/consumer pair take the class lock every 32 objects on
 * each side, and with four such threads on two cores a third of the time
 * went to the lock: its waits, its wake-ups and the mutex calls. A trip is
 * also at most CC_TRIP_MAX_BYTES of objects, so that a thread that frees
 * objects of many classes keeps no more than that of each before it gives
 * them back. The two bounds meet at 64 B: classes up to it move
 * CC_TRIP_MAX_BATCHES batches, larger ones fewer, to the same bytes. Twice
 * the first trip (8 batches, 16 KiB): a producer/consumer pair of 64 B
 * blocks takes the lock once per 512 each way instead of 256, for about
 * half a MiB more kept by a consumer of some 30 classes. A trip's rows are
 * copied through the stack: CC_TRIP_MAX_BATCHES x HC_MAX_BATCH pointers. */
#define CC_TRIP_MAX_BATCHES 16
#define CC_TRIP_MAX_BYTES   ((size_t)32 << 10)

/* Runs of one span's objects (central_cache.c, cc_run) one hold of the
 * bucket lock gives back to their spans, their lookups done first, without
 * the lock. A hold ends at a count of runs, not of objects: under the lock
 * a run costs one splice whatever its length, so a trip carved from a few
 * spans goes home under one hold. Ended at a batch's count of objects, it
 * took a hold per batch of a trip, most of them splicing one more part of
 * the same span's run. The bound is the runs' room on the stack. */
#define CC_RETURN_RUNS 32

/* Bytes of empty spans (all objects free) the bucket of a class of objects
 * up to CC_SPARES_MAX_SIZE keeps before it gives one back (other classes
 * keep one span). A class that empties and refills (a program that frees a
 * phase's objects and allocates the next phase's) reuses its own spans,
 * carved again, instead of sending each through the page cache's lock and
 * back; 16 MiB holds one round of the bench's `hold` workload (11 MiB of
 * 128 B objects). Not RSS the program's peak did not have: the bytes were
 * in use before they emptied. But they are out of sight of stage 4's
 * release policy, which sees the page cache only: they go back with
 * hc_release_free_memory, an out-of-memory retry, or the next idle sweep
 * once the class stops fetching (CC_SWEEP_PAGES). Hence the size limit:
 * above it a span holds few objects, so a spare saves little carving, and
 * big blocks freed in bulk go where the release policy finds them; and
 * hence a total for all classes (CC_SPARE_BYTES_TOTAL, below), so that what
 * a program that frees everything and idles keeps is one figure, not this
 * one times every class. */
#define CC_EMPTY_BYTES_KEPT ((size_t)16 << 20)
#define CC_SPARES_MAX_SIZE  1024

/* Empty spans class `cls`'s bucket keeps at most (at least one). */
size_t cc_spares_kept(unsigned cls);

/* Bytes all classes' spares may add up to beyond each class's first one:
 * two classes' worth of CC_EMPTY_BYTES_KEPT (a producer/consumer pair of
 * classes both keep theirs), the same budget gperftools gives all its
 * thread caches together. What a program that frees everything and then
 * idles keeps resident in spares is at most this plus one span per class. */
#define CC_SPARE_BYTES_TOTAL ((size_t)32 << 20)

/* The spares' bytes counted against CC_SPARE_BYTES_TOTAL now. */
size_t cc_spare_bytes_beyond_first(void);

/* The idle sweep's clock is the pages the central cache carves into new
 * spans. A class that no thread fetched from while this many were carved
 * (1 MiB) gives back its transfer cache and its spare empty spans, as
 * cc_give_back_cached does for all: memory a program stopped asking for in
 * one class goes to the spans the heap is growing for in others, instead
 * of waiting for good (up to CC_TRANSFER_MAX_BYTES and CC_EMPTY_BYTES_KEPT
 * per class). The sweep looks every CC_SWEEP_EVERY_PAGES pages, so the heap
 * grows by at most the sum of the two before an idle class's cache is
 * there for it; a class that fetches keeps its cache however long it
 * holds it. */
#define CC_SWEEP_PAGES       128
#define CC_SWEEP_EVERY_PAGES 32

/* Batches the transfer cache of class `cls` may hold (at least 1). */
uint32_t cc_transfer_capacity(unsigned cls);

/* Gives what the central cache holds for reuse -- the transfer caches'
 * batches and the spare empty spans -- back to the spans and the page cache,
 * where empty spans merge (hc_release_free_memory calls it). */
void cc_give_back_cached(void);

/* For tests: class `cls`'s buckets, each read under its lock. */
typedef struct cc_bucket_census {
    uint32_t batches;           /* in the transfer cache */
    size_t transfer_objects;    /* in those batches */
    size_t span_free_objects;   /* on the bucket's spans */
    size_t spans;               /* on the bucket's list (spans with a free object) */
    size_t empty_spans;         /* of which with every object free (spares) */
    size_t span_bytes;          /* in every span the class holds */
} cc_bucket_census;

void cc_get_bucket_census(unsigned cls, cc_bucket_census *out);

/* The same, of one shard's bucket (the class's census is their sum). */
void cc_get_shard_census(unsigned shard, unsigned cls, cc_bucket_census *out);

#endif /* HC_TRANSFER_CACHE_H_ */
