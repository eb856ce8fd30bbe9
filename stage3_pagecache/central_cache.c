/* stage3_pagecache/central_cache.c — layer 2, now on top of the page cache.
 *
 * What changed from stage 2 (diff this file against
 * stage2_centralcache/central_cache.c):
 *   - spans come from the page cache (pc_alloc_span), not straight from the
 *     OS, and each span keeps its own list of free objects;
 *   - a bucket holds the spans of its class that have free objects, and
 *     hands objects out span by span;
 *   - every span counts its objects handed out (objects_in_use). An object
 *     given back finds its span through the page map; when the count drops
 *     to zero the whole span goes back to the page cache, where it merges
 *     with its free neighbours. Without the count a span could go back (and
 *     be reused for another class, or a large block) while a thread still
 *     holds one of its objects: two owners for the same bytes;
 *   - an object given back to the wrong class, or one that is no object of
 *     ours at all, is caught here (the span says what it is) and aborts.
 * May touch: the buckets and their spans' object lists (under the bucket
 * lock), the page cache through pc_* (never with a bucket lock held: see
 * page_cache.h for the lock order), the page map (lock-free reads). */
#include "stage2_centralcache/central_cache.h"

#include <stddef.h>

#include "common/fatal.h"
#include "common/free_list.h"
#include "common/size_class.h"
#include "common/trace.h"
#include "common/track.h"
#include "stage3_pagecache/page_cache.h"
#include "stage3_pagecache/span.h"

/* Aligned (and so padded) to a cache line: two hot buckets side by side
 * would otherwise share a line, and each lock taken on one would evict the
 * other from every other core's cache (false sharing). */
typedef struct cc_bucket {
    hc_lock lock;
    hc_span spans;       /* sentinel: this class's spans that have free objects */
    size_t free_objects; /* on those spans, for stats */
    size_t span_bytes;   /* in spans this class holds now */
} HC_CACHE_ALIGNED cc_bucket;

static cc_bucket cc_buckets[HC_NUM_CLASSES];
static pthread_once_t cc_init_once = PTHREAD_ONCE_INIT;

static void cc_init(void) {
    for (unsigned cls = 0; cls < HC_NUM_CLASSES; cls++) {
        hc_lock_init(&cc_buckets[cls].lock);
        span_list_init(&cc_buckets[cls].spans);
    }
}

/* Static zero-initialised mutexes are valid on glibc, but saying so
 * portably costs one pthread_once on the slow path. */
static cc_bucket *cc_bucket_of(unsigned cls) {
    pthread_once(&cc_init_once, cc_init);
    return &cc_buckets[cls];
}

hc_lock *cc_bucket_lock(unsigned cls) { return &cc_bucket_of(cls)->lock; }

/* Takes a span for class `cls` from the page cache and links all of its
 * objects, in address order, into the span's free list. Runs without any
 * lock: nobody else knows the span yet. NULL when the OS refused memory. */
static hc_span *cc_carve_new_span(unsigned cls) {
    hc_span *span = pc_alloc_span(sc_span_pages(cls), cls);
    if (span == NULL)
        return NULL;
    size_t size = span->object_size;
    char *obj = span_start(span);
    for (uint32_t i = 0; i + 1 < span->object_count; i++, obj += size) {
        track_internal_begin(obj, sizeof(void *));
        fl_set_next(obj, obj + size);
        track_internal_end(obj, sizeof(void *));
    }
    track_internal_begin(obj, sizeof(void *));
    fl_set_next(obj, NULL);
    track_internal_end(obj, sizeof(void *));
    span->free_objects = span_start(span);
    span->free_count = span->object_count;
    return span;
}

/* Moves up to `want` objects from the bucket's spans to a chain; the bucket
 * lock is held. Objects come from the first span on the list until it is
 * empty, so a span in heavy use fills up and a quiet one can drain back to
 * the page cache. */
static uint32_t cc_take(cc_bucket *bucket, uint32_t want, void **first, void **last) {
    uint32_t got = 0;
    void *head = NULL, *tail = NULL;
    while (got < want && !span_list_empty(&bucket->spans)) {
        hc_span *span = bucket->spans.next;
        while (got < want && span->free_objects != NULL) {
            void *obj = span->free_objects;
            track_internal_begin(obj, sizeof(void *));
            span->free_objects = fl_next(obj);
            fl_set_next(obj, NULL);
            track_internal_end(obj, sizeof(void *));
            if (tail != NULL) {
                track_internal_begin(tail, sizeof(void *));
                fl_set_next(tail, obj);
                track_internal_end(tail, sizeof(void *));
            } else {
                head = obj;
            }
            tail = obj;
            span->free_count--;
            span->objects_in_use++; /* the reference the page cache must wait for */
            got++;
        }
        if (span->free_objects == NULL) {
            span_list_remove(span);
            span->in_bucket_list = 0;
        }
    }
    bucket->free_objects -= got;
    *first = head;
    *last = tail;
    return got;
}

uint32_t cc_fetch(unsigned cls, uint32_t want, void **first, void **last) {
    HC_TRACE(HC_TRACE_CC_FETCH, cls);
    cc_bucket *bucket = cc_bucket_of(cls);
    hc_lock_acquire(&bucket->lock);
    uint32_t got = cc_take(bucket, want, first, last);
    hc_lock_release(&bucket->lock);
    if (got > 0)
        return got;

    /* No span of this class has a free object: take a new one from the page
     * cache with no bucket lock held, then hand out from it. */
    hc_span *span = cc_carve_new_span(cls);
    if (span == NULL)
        return 0; /* errno = ENOMEM from the page cache */
    hc_lock_acquire(&bucket->lock);
    span_list_push(&bucket->spans, span);
    span->in_bucket_list = 1;
    bucket->free_objects += span->free_count;
    bucket->span_bytes += span_bytes(span);
    got = cc_take(bucket, want, first, last);
    hc_lock_release(&bucket->lock);
    return got;
}

/* The span of an object given back to class `cls`'s bucket. The page map
 * entry is current, since the object is in use; anything else (a pointer
 * that is no object of ours, or one of another class: a wrong size given to
 * hc_free_sized) would corrupt the span, so it stops the program. */
static hc_span *cc_span_of_object(unsigned cls, void *obj) {
    hc_span *span = pc_span_of(obj);
    if (HC_UNLIKELY(span == NULL || span->state != SPAN_SMALL || span->size_class != cls ||
                    span_object_index(span, obj) < 0 || span->objects_in_use == 0))
        hc_fatal_pointer("free(): invalid pointer", obj);
    return span;
}

void cc_return(unsigned cls, void *first, void *last, uint32_t n) {
    HC_TRACE(HC_TRACE_CC_RETURN, cls);
    (void)last; /* the chain is walked object by object: each finds its own span */
    /* LAB BEGIN: span_refcount_drop */
    cc_bucket *bucket = cc_bucket_of(cls);
    hc_span released; /* spans whose count dropped to zero, for the page cache */
    span_list_init(&released);
    hc_lock_acquire(&bucket->lock);
    void *obj = first;
    for (uint32_t i = 0; i < n; i++) {
        void *next = NULL;
        if (i + 1 < n) { /* the last object's link need not be NULL: never follow it */
            track_internal_begin(obj, sizeof(void *));
            next = fl_next(obj);
            track_internal_end(obj, sizeof(void *));
        }
        hc_span *span = cc_span_of_object(cls, obj);
        track_internal_begin(obj, sizeof(void *));
        fl_set_next(obj, span->free_objects);
        track_internal_end(obj, sizeof(void *));
        span->free_objects = obj;
        span->free_count++;
        bucket->free_objects++;
        if (--span->objects_in_use == 0) {
            /* Every object is back: the span leaves the bucket for the page
             * cache (after the lock is dropped). */
            if (span->in_bucket_list)
                span_list_remove(span);
            span->in_bucket_list = 0;
            bucket->free_objects -= span->free_count;
            bucket->span_bytes -= span_bytes(span);
            span_list_push(&released, span);
        } else if (!span->in_bucket_list) {
            span_list_push(&bucket->spans, span);
            span->in_bucket_list = 1;
        }
        obj = next;
    }
    hc_lock_release(&bucket->lock);
    while (!span_list_empty(&released)) {
        hc_span *span = released.next;
        span_list_remove(span);
        pc_free_span(span);
    }
    /* LAB END: span_refcount_drop */
}

void cc_collect_stats(hc_stats *out) {
    size_t central = 0, spans = 0;
    for (unsigned cls = 1; cls < HC_NUM_CLASSES; cls++) {
        cc_bucket *bucket = cc_bucket_of(cls);
        hc_lock_acquire(&bucket->lock);
        central += bucket->free_objects * sc_size(cls);
        /* The tail of a span too small for one more object counts as in
         * use: it is memory the class holds and nobody else can. */
        spans += bucket->span_bytes;
        hc_lock_release(&bucket->lock);
    }
    out->central_cache_bytes += central;
    out->bytes_in_use += spans - central;
}
