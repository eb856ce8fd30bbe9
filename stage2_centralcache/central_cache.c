/* stage2_centralcache/central_cache.c — layer 2: buckets of free objects.
 *
 * Each bucket holds the free objects of one size class: objects threads
 * gave back, and objects carved from spans (runs of pages) mapped from the
 * OS when the bucket ran dry. A bucket never gives memory back to the OS,
 * and never knows which span an object came from: that bookkeeping is what
 * stage 3 adds.
 * May touch: the buckets (under their own lock), common/ (os, size classes).
 * Never holds a bucket lock while calling into the OS: a page fault or an
 * mmap takes microseconds, and every thread of that class would wait. */
#include "stage2_centralcache/central_cache.h"

#include <stdatomic.h>
#include <stddef.h>

#include "common/free_list.h"
#include "common/os.h"
#include "common/size_class.h"
#include "common/track.h"

/* Aligned (and so padded) to a cache line: two hot buckets side by side
 * would otherwise share a line, and each lock taken on one would evict the
 * other from every other core's cache (false sharing). */
typedef struct cc_bucket {
    hc_lock lock;
    hc_free_list objects;
    size_t span_bytes; /* mapped for this class so far (never unmapped here) */
} HC_CACHE_ALIGNED cc_bucket;

static cc_bucket cc_buckets[HC_NUM_CLASSES];
static pthread_once_t cc_init_once = PTHREAD_ONCE_INIT;

static void cc_init(void) {
    for (unsigned cls = 0; cls < HC_NUM_CLASSES; cls++)
        hc_lock_init(&cc_buckets[cls].lock);
}

/* Static zero-initialised mutexes are valid on glibc, but saying so
 * portably costs one pthread_once on the slow path. */
static cc_bucket *cc_bucket_of(unsigned cls) {
    pthread_once(&cc_init_once, cc_init);
    return &cc_buckets[cls];
}

hc_lock *cc_bucket_lock(unsigned cls) { return &cc_bucket_of(cls)->lock; }

/* Maps one span for class `cls` and links all of its objects, in address
 * order, into a chain. Runs without any lock. Returns the object count. */
static uint32_t cc_carve_new_span(unsigned cls, void **first, void **last) {
    size_t size = sc_size(cls);
    size_t span_bytes = sc_span_pages(cls) << HC_PAGE_SHIFT;
    char *span = os_map(span_bytes);
    if (span == NULL)
        return 0;
    track_internal_end(span, span_bytes); /* no object in it is handed out yet */
    uint32_t count = (uint32_t)(span_bytes / size);
    char *obj = span;
    for (uint32_t i = 0; i + 1 < count; i++, obj += size)
        fl_set_next(obj, obj + size);
    fl_set_next(obj, NULL);
    *first = span;
    *last = obj;
    cc_bucket *bucket = cc_bucket_of(cls);
    hc_lock_acquire(&bucket->lock);
    bucket->span_bytes += span_bytes;
    hc_lock_release(&bucket->lock);
    return count;
}

uint32_t cc_fetch(unsigned cls, uint32_t want, void **first, void **last) {
    /* LAB BEGIN: central_fetch */
    cc_bucket *bucket = cc_bucket_of(cls);
    hc_lock_acquire(&bucket->lock);
    uint32_t got = fl_pop_range(&bucket->objects, want, first, last);
    hc_lock_release(&bucket->lock);
    if (got > 0)
        return got;

    /* Empty bucket: carve a fresh span outside the lock, keep `want` of its
     * objects for the caller and give the rest to the bucket. */
    void *span_first, *span_last;
    uint32_t carved = cc_carve_new_span(cls, &span_first, &span_last);
    if (carved == 0)
        return 0;
    hc_free_list chain = {span_first, 0u - carved, 0}; /* no limit: room -carved is length carved */
    got = fl_pop_range(&chain, want, first, last);
    if (fl_length(&chain) > 0) {
        hc_lock_acquire(&bucket->lock);
        fl_push_range(&bucket->objects, chain.head, span_last, fl_length(&chain));
        hc_lock_release(&bucket->lock);
    }
    return got;
    /* LAB END: central_fetch */
}

void cc_return(unsigned cls, void *first, void *last, uint32_t n) {
    /* LAB BEGIN: central_return */
    cc_bucket *bucket = cc_bucket_of(cls);
    hc_lock_acquire(&bucket->lock);
    fl_push_range(&bucket->objects, first, last, n);
    hc_lock_release(&bucket->lock);
    /* LAB END: central_return */
}

void cc_collect_stats(hc_stats *out) {
    size_t central = 0, spans = 0;
    for (unsigned cls = 1; cls < HC_NUM_CLASSES; cls++) {
        cc_bucket *bucket = cc_bucket_of(cls);
        hc_lock_acquire(&bucket->lock);
        central += (size_t)fl_length(&bucket->objects) * sc_size(cls);
        /* The tail of a span too small for one more object counts as in
         * use: it is memory the class holds and nobody else can. */
        spans += bucket->span_bytes;
        hc_lock_release(&bucket->lock);
    }
    out->central_cache_bytes += central;
    out->bytes_in_use += spans - central;
}
