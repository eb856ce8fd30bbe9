/* stage3_pagecache/central_cache_check.c — layer 2 on the page cache: the
 * central cache seen from outside, read only: a class's census and each
 * shard's (cc_get_bucket_census, cc_get_shard_census, for tests), the
 * stats' figures (cc_collect_stats), and the hardened build's check of
 * every chain that crosses the central cache (cc_check_chain). Apart from
 * central_cache.c, which moves objects and spans, so that a reader of the
 * central cache reads its mechanism alone; both share the buckets through
 * central_cache_internal.h. Every function that reads a bucket takes its lock.
 * May touch: nothing; reads the buckets, the page map and the spans. */
#include <stddef.h>
#include <stdint.h>

#include "common/fatal.h"
#include "common/free_list.h"
#include "common/harden.h"
#include "common/lock.h"
#include "common/size_class.h"
#include "common/trace.h"
#include "stage2_centralcache/central_cache.h"
#include "stage3_pagecache/central_cache_internal.h"
#include "stage3_pagecache/page_cache.h"
#include "stage3_pagecache/page_map.h"
#include "stage3_pagecache/span.h"

/* Hardened build (common/harden.h): every object of a chain that crosses
 * the central cache lies in a small span of its class, by the page map.
 * The default build checks objects only where it reads their spans. */
void cc_check_chain(unsigned cls, void *first, uint32_t n) {
    if (!HC_HARDENED)
        return;
    void *obj = first;
    for (uint32_t i = 0; i < n; i++) {
        harden_check_class(obj, cls, pm_class_of(obj));
        size_t class_offset;
        if (!pm_small_object_start(obj, &class_offset) || class_offset != cls * PM_CLASS_STRIDE ||
            pc_span_of(obj) == NULL ||
            span_object_index(pc_span_of(obj), obj) < 0)
            hc_fatal_pointer_why("malloc(): corrupted free list at", obj,
                                 "a link points inside an object, not at its start");
        obj = i + 1 < n ? fl_next(obj) : NULL;
    }
}

/* Adds bucket `shard` of class `cls` to *out, under its lock. */
static void cc_add_shard_census(unsigned shard, unsigned cls, cc_bucket_census *out) {
    cc_bucket *bucket = cc_shard_bucket(shard, cls);
    cc_lock_bucket(bucket);
    out->batches += bucket->batch_count;
    out->transfer_objects += bucket->transfer_objects;
    out->span_free_objects += bucket->free_objects;
    for (hc_span *span = bucket->spans.next; span != &bucket->spans; span = span->next)
        out->spans++;
    for (hc_span *span = bucket->spares.next; span != &bucket->spares; span = span->next)
        out->spans++;
    out->empty_spans += bucket->empty_spans;
    out->span_bytes += bucket->span_bytes;
    hc_lock_unlock(&bucket->lock);
}

void cc_get_shard_census(unsigned shard, unsigned cls, cc_bucket_census *out) {
    *out = (cc_bucket_census){0};
    cc_add_shard_census(shard, cls, out);
}

void cc_get_bucket_census(unsigned cls, cc_bucket_census *out) {
    *out = (cc_bucket_census){0};
    for (unsigned shard = 0; shard < CC_SHARDS; shard++) /* one at a time: a sum, not one snapshot */
        cc_add_shard_census(shard, cls, out);
}

void cc_collect_stats(hc_stats *out) {
    size_t central = 0, spans = 0;
    for (unsigned shard = 0; shard < CC_SHARDS; shard++)
        for (unsigned cls = 1; cls < HC_NUM_CLASSES; cls++) {
            cc_bucket *bucket = cc_shard_bucket(shard, cls);
            cc_lock_bucket(bucket);
            /* Objects in the transfer cache are free central objects too;
             * they are counted out of their spans, like those in thread
             * caches. */
            central += (bucket->free_objects + bucket->transfer_objects) * sc_size(cls);
            /* The tail of a span too small for one more object counts as
             * in use: it is memory the class holds and nobody else can. */
            spans += bucket->span_bytes;
            hc_lock_unlock(&bucket->lock);
        }
    out->central_cache_bytes += central;
    out->bytes_in_use += spans - central;
}
