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

#include "common/hcmalloc.h"
#include "common/lock.h"

/* Moves up to `want` (>= 1) free objects of class `cls` to the caller as a
 * NULL-terminated chain first..last. Returns how many; 0 means the OS
 * refused memory (errno = ENOMEM). May return fewer than asked. */
uint32_t cc_fetch(unsigned cls, uint32_t want, void **first, void **last);

/* Takes back a chain of `n` objects of class `cls`, first..last (the last
 * object's link need not be NULL). */
void cc_return(unsigned cls, void *first, void *last, uint32_t n);

/* Adds the central cache's figures to *out: central_cache_bytes, and to
 * bytes_in_use the object bytes handed to thread caches and not returned. */
void cc_collect_stats(hc_stats *out);

/* For tests: the lock of class `cls`'s bucket. */
hc_lock *cc_bucket_lock(unsigned cls);

#endif /* HC_CENTRAL_CACHE_H_ */
