/* stage2_centralcache/central_cache.c — layer 2: buckets of free objects.
 *
 * Each bucket holds the free objects of one size class: objects threads
 * gave back, and the never-used rest of the span (a run of pages) it mapped
 * from the OS when it last ran dry, cut into batches of whole cache lines
 * (cc_fresh_count) so that two threads' first objects never share a line.
 * A bucket never gives memory back to the OS, and never knows which span an
 * object came from: that bookkeeping is what stage 3 adds.
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
    hc_free_list objects; /* given back by threads */
    char *fresh;          /* [fresh, fresh_end): the newest span's objects never handed out */
    char *fresh_end;
    size_t span_bytes;    /* mapped for this class so far (never unmapped here) */
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

/* Maps one span for class `cls`; runs without any lock. NULL when the OS
 * refused memory. Its objects are linked only as they are handed out. */
static char *cc_map_span(unsigned cls) {
    size_t span_bytes = sc_span_pages(cls) << HC_PAGE_SHIFT;
    char *span = os_map(span_bytes);
    if (span != NULL)
        track_internal_end(span, span_bytes); /* no object in it is handed out yet */
    return span;
}

/* Makes `span`, just mapped, the bucket's never-used memory; the bucket
 * lock is held. 0 (nothing done) when the bucket still has some: another
 * thread's new span came first, and the caller unmaps its own. */
static int cc_install_span(cc_bucket *bucket, unsigned cls, char *span) {
    if (bucket->fresh != bucket->fresh_end)
        return 0;
    size_t size = sc_size(cls), span_bytes = sc_span_pages(cls) << HC_PAGE_SHIFT;
    bucket->fresh = span;
    bucket->fresh_end = span + span_bytes / size * size; /* the tail too small for an object stays out */
    bucket->span_bytes += span_bytes;
    return 1;
}

/* Cuts a batch for `want` from the bucket's never-used memory, in address
 * order, as a NULL-terminated chain: whole cache lines (cc_fresh_count),
 * so it shares no line with the batch cut before or after it. The bucket
 * lock is held. Returns how many (0 when that memory is used up). */
static uint32_t cc_cut_fresh(cc_bucket *bucket, unsigned cls, uint32_t want, void **first, void **last) {
    size_t size = sc_size(cls);
    uint32_t left = (uint32_t)((size_t)(bucket->fresh_end - bucket->fresh) / size);
    uint32_t count = cc_fresh_count(cls, want);
    if (count > left)
        count = left;
    if (count == 0)
        return 0;
    char *obj = bucket->fresh;
    for (uint32_t i = 0; i + 1 < count; i++, obj += size)
        fl_set_next(obj, obj + size);
    fl_set_next(obj, NULL);
    *first = bucket->fresh;
    *last = obj;
    bucket->fresh = obj + size;
    return count;
}

uint32_t cc_fetch(unsigned cls, uint32_t want, void **first, void **last) {
    /* LAB BEGIN: central_fetch */
    cc_bucket *bucket = cc_bucket_of(cls);
    hc_lock_acquire(&bucket->lock);
    uint32_t got = fl_pop_range(&bucket->objects, want, first, last);
    if (got == 0)
        got = cc_cut_fresh(bucket, cls, want, first, last);
    hc_lock_unlock(&bucket->lock);
    if (got > 0)
        return got;

    /* Nothing left: map a fresh span outside the lock, then cut from it. */
    char *span = cc_map_span(cls);
    if (span == NULL)
        return 0;
    hc_lock_acquire(&bucket->lock);
    int installed = cc_install_span(bucket, cls, span);
    got = cc_cut_fresh(bucket, cls, want, first, last);
    hc_lock_unlock(&bucket->lock);
    if (!installed) /* another thread's span is there: ours was never seen */
        os_unmap(span, sc_span_pages(cls) << HC_PAGE_SHIFT);
    return got;
    /* LAB END: central_fetch */
}

void cc_return(unsigned cls, void *first, void *last, uint32_t n) {
    /* LAB BEGIN: central_return */
    cc_bucket *bucket = cc_bucket_of(cls);
    hc_lock_acquire(&bucket->lock);
    fl_push_range(&bucket->objects, first, last, n);
    hc_lock_unlock(&bucket->lock);
    /* LAB END: central_return */
}

uint32_t cc_trip_batches(unsigned cls) {
    (void)cls;
    return 1;
}

uint32_t cc_return_max(unsigned cls) {
    (void)cls;
    return UINT32_MAX;
}

void cc_collect_stats(hc_stats *out) {
    size_t central = 0, spans = 0;
    for (unsigned cls = 1; cls < HC_NUM_CLASSES; cls++) {
        cc_bucket *bucket = cc_bucket_of(cls);
        hc_lock_acquire(&bucket->lock);
        central += (size_t)fl_length(&bucket->objects) * sc_size(cls) +
                   (size_t)(bucket->fresh_end - bucket->fresh);
        /* The tail of a span too small for one more object counts as in
         * use: it is memory the class holds and nobody else can. */
        spans += bucket->span_bytes;
        hc_lock_unlock(&bucket->lock);
    }
    out->central_cache_bytes += central;
    out->bytes_in_use += spans - central;
}
