/* stage3_pagecache/transfer_cache.c — layer 2 on the page cache: the
 * transfer cache's stack of whole batches, each a row of pointers
 * (transfer_cache.h says what it is for, central_cache_internal.h how a
 * batch is kept). central_cache.c calls these under, or around, the bucket
 * lock; nothing here reads a span or the page map.
 * May touch: a bucket's batches (under its lock); the links of a chain
 * being given back, read by the thread that gives it; the links of the
 * batches a thread fetched, loaded by that thread. */
#include <stddef.h>
#include <string.h>

#include "common/free_list.h"
#include "common/lock.h"
#include "common/size_class.h"
#include "common/trace.h"
#include "common/track.h"
#include "stage3_pagecache/central_cache_internal.h"
#include "stage3_pagecache/transfer_cache.h"

uint32_t cc_transfer_capacity(unsigned cls) {
    size_t batch_bytes = (size_t)sc_batch(cls) * sc_size(cls);
    size_t n = CC_TRANSFER_MAX_BYTES / batch_bytes;
    if (n < 1) n = 1;
    if (n > CC_TRANSFER_MAX_BATCHES) n = CC_TRANSFER_MAX_BATCHES;
    return (uint32_t)n;
}

/* Is the transfer cache full? An unlocked read, which only saves a walk
 * and a lock trip when it is; cc_transfer_push's locked one decides. */
static int cc_transfer_looks_full(cc_bucket *bucket) {
    return __atomic_load_n(&bucket->batch_count, __ATOMIC_RELAXED) >= bucket->batch_capacity;
}

/* Pushes `rows` whole batches of `batch` objects each, whose addresses
 * `objects` lists in chain order, on the transfer cache, as many as fit;
 * returns how many. The lock is held for a copy of the rows. */
static uint32_t cc_transfer_push(cc_bucket *bucket, void *const *objects, uint32_t batch, uint32_t rows) {
    cc_lock_bucket(bucket);
    uint32_t room = bucket->batch_capacity - bucket->batch_count;
    uint32_t pushed = rows < room ? rows : room;
    for (uint32_t r = 0; r < pushed; r++) {
        cc_batch *slot = &bucket->batches[bucket->batch_count + r];
        slot->count = batch;
        slot->skip = 0;
        memcpy(slot->objects, objects + (size_t)r * batch, batch * sizeof *objects);
    }
    cc_set_batch_count(bucket, bucket->batch_count + pushed);
    bucket->transfer_objects += (size_t)pushed * batch;
    hc_lock_unlock(&bucket->lock);
    return pushed;
}

void *cc_transfer_return(cc_bucket *bucket, unsigned cls, void *first, uint32_t *n) {
    const uint32_t batch = sc_batch(cls);
    void *objects[CC_TRIP_MAX_BATCHES * HC_MAX_BATCH];
    while (*n >= batch && !cc_transfer_looks_full(bucket)) {
        uint32_t rows = *n / batch < CC_TRIP_MAX_BATCHES ? *n / batch : CC_TRIP_MAX_BATCHES;
        uint32_t total = rows * batch;
        /* The rows, read off the links with no lock held, by the thread that
         * has just walked them to cut them off its list (tc_give_back, a
         * trip at most: cc_return_max): they are in its cache. */
        void *obj = first;
        for (uint32_t i = 0; i < total; i++) {
            objects[i] = obj;
            /* the last link is followed only if more come after it */
            obj = i + 1 < total || *n > total ? fl_next(obj) : NULL;
        }
        uint32_t pushed = cc_transfer_push(bucket, objects, batch, rows);
        *n -= pushed * batch;
        if (pushed < rows) { /* full: the rest, from the first row not pushed, goes to the spans */
            first = objects[pushed * batch];
            break;
        }
        first = obj;
    }
    return first;
}

uint32_t cc_transfer_pop(cc_bucket *bucket, uint32_t want, void **objects, uint32_t *row_ends, uint32_t *rows) {
    uint32_t got = 0, n_rows = 0;
    while (got < want && n_rows < CC_TRIP_MAX_BATCHES && bucket->batch_count > 0) {
        cc_batch *top = &bucket->batches[bucket->batch_count - 1];
        uint32_t take = top->count < want - got ? top->count : want - got;
        memcpy(objects + got, top->objects + top->skip, take * sizeof *objects);
        if (take == top->count) {
            cc_set_batch_count(bucket, bucket->batch_count - 1);
        } else { /* a thread still in slow start asks for less than a batch */
            top->skip += take;
            top->count -= take;
        }
        bucket->transfer_objects -= take;
        got += take;
        row_ends[n_rows++] = got;
    }
    *rows = n_rows;
    return got;
}

void cc_link_rows(void *const *objects, const uint32_t *row_ends, uint32_t rows) {
    for (uint32_t r = 0; r + 1 < rows; r++)
        fl_set_next(objects[row_ends[r] - 1], objects[row_ends[r]]);
    fl_set_next(objects[row_ends[rows - 1] - 1], NULL);
}

void cc_pull_objects(void *const *objects, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        track_internal_begin(objects[i], sizeof(uintptr_t));
        (void)*(const volatile uintptr_t *)objects[i]; /* volatile: a load the compiler keeps */
        track_internal_end(objects[i], sizeof(uintptr_t));
    }
}

uint32_t cc_transfer_take_top(cc_bucket *bucket, uint32_t max, void **firsts, uint32_t *counts) {
    uint32_t count = bucket->batch_count < max ? bucket->batch_count : max;
    for (uint32_t i = 0; i < count; i++) {
        const cc_batch *batch = &bucket->batches[bucket->batch_count - 1 - i];
        firsts[i] = batch->objects[batch->skip];
        counts[i] = batch->count;
        bucket->transfer_objects -= batch->count;
    }
    cc_set_batch_count(bucket, bucket->batch_count - count);
    return count;
}
