/* stage2_centralcache/central_cache.h — layer 2: the central cache.
 *
 * One bucket per size class, each with its own lock: threads that allocate
 * different classes never contend, and a thread takes a bucket's lock once
 * per batch of objects, not once per object. Thread caches (layer 1) call
 * only the functions below; what the bucket does behind them (carve spans
 * mapped from the OS here, take spans from a page cache in stage 3) is the
 * central cache's business.
 *
 * Stage 3 keeps this header and changes central_cache.c. */
#ifndef HC_CENTRAL_CACHE_H_
#define HC_CENTRAL_CACHE_H_


#include <stdint.h>

#include "common/compiler.h"
#include "common/hcmalloc.h"
#include "common/lock.h"
#include "common/size_class.h"

/* Moves up to `want` (>= 1) free objects of class `cls` to the caller as a
 * NULL-terminated chain first..last. Returns how many; 0 means the OS
 * refused memory (errno = ENOMEM). May return fewer than asked, and, when
 * it cuts never-used memory for a request smaller than one line's worth,
 * more: at most max(want, cc_line_objects(cls)) (cc_fresh_count). */
uint32_t cc_fetch(unsigned cls, uint32_t want, void **first, void **last);

/* The fewest objects of class `cls` that fill whole cache lines, cut from a
 * line boundary: 64 / gcd(size, 64), that is 1 for a multiple of 64 bytes,
 * 2 for 32 or 96, 4 for 16, 48 or 80, 8 for 8. */
HC_INLINE uint32_t cc_line_objects(unsigned cls) {
    size_t size = sc_size(cls), low_bit = size & (0 - size);
    return low_bit >= HC_CACHE_LINE ? 1 : (uint32_t)(HC_CACHE_LINE / low_bit);
}

/* How many never-used objects a batch asked for `want` takes: whole lines'
 * worth (want rounded down to cc_line_objects), one line's worth if want is
 * less. Batches cut so from a span that starts on a page share no cache
 * line with each other: two threads that each reuse their first object
 * never write one line from two cores (tests/false_sharing_test.cc). */
HC_INLINE uint32_t cc_fresh_count(unsigned cls, uint32_t want) {
    uint32_t line = cc_line_objects(cls);
    return want < line ? line : want - want % line;
}

/* How many whole batches of class `cls` one trip to the central cache moves
 * under one hold of the class's lock: a refill asks for up to this many once
 * its list's limit allows, and a list that overflows gives back as many. 1
 * here, where a bucket's objects are a linked list: a longer trip is a longer
 * walk under the lock. Stage 3's transfer cache moves rows of pointers, and
 * answers up to CC_TRIP_MAX_BATCHES (stage3_pagecache/transfer_cache.h). */
uint32_t cc_trip_batches(unsigned cls);

/* Takes back a chain of `n` objects of class `cls`, first..last (the last
 * object's link need not be NULL). */
void cc_return(unsigned cls, void *first, void *last, uint32_t n);

/* The most objects of class `cls` one cc_return should be handed: a thread
 * that gives back more cuts them off its list and hands them over this
 * many at a time. Here, where a bucket links a chain in whole, any number
 * (UINT32_MAX). Stage 3 reads every object it is handed, to find its span,
 * right after the thread read it to cut it off: a trip at a time, the
 * objects are still in the core's cache for that second read; 100,000 at
 * once, they are not. */
uint32_t cc_return_max(unsigned cls);

/* Adds the central cache's figures to *out: central_cache_bytes, and to
 * bytes_in_use the object bytes handed to thread caches and not returned. */
void cc_collect_stats(hc_stats *out);

/* For tests: the lock of class `cls`'s bucket. */
hc_lock *cc_bucket_lock(unsigned cls);

#endif /* HC_CENTRAL_CACHE_H_ */
