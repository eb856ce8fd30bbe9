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
 *   - the bucket writes its class into the page map for every page of a
 *     span it carves (and clears it before the span goes back), which is
 *     how hc_free finds an object's class without reading the span;
 *   - a transfer cache (transfer_cache.h, its stack in transfer_cache.c)
 *     in front of the spans: whole batches given back, each a row of
 *     pointers, go to the next thread that asks, untouched; the
 *     per-object span work happens only when it overflows or runs dry, with
 *     the object-to-span lookups done before the bucket lock is taken; empty
 *     spans wait in the bucket as spares (up to CC_EMPTY_BYTES_KEPT a class,
 *     CC_SPARE_BYTES_TOTAL for all) before they go back, and the newest is
 *     carved again in address order when one is reused;
 *   - each class has CC_SHARDS buckets (transfer_cache.h): a thread uses
 *     one, a span belongs to the one that carved it (and lies among that
 *     shard's other spans: pc_alloc_span_placed), and objects given back
 *     go home to their span's shard, as whole batches or to the spans; a
 *     fetch takes from its own shard's transfer cache and spans, then a
 *     full transfer cache of another shard, and carves only when none is;
 *   - a chain given back is read here (its rows, its objects' spans), so a
 *     thread hands over at most a trip per call (cc_return_max), which it
 *     has just read to cut it off its list;
 *   - an object given back to the wrong class, or one that is no object of
 *     ours at all, is caught when it reaches its span (the span says what it
 *     is) and aborts.
 * Its read-only views (a class's census, the stats) and the hardened
 * build's chain check are in central_cache_check.c, beside it; the
 * buckets themselves, their set-up and which shard a thread uses, in
 * central_shards.c.
 * May touch: the buckets, their transfer caches and their spans' object
 * lists (under the bucket lock, one bucket's at a time), the page cache
 * through pc_* (never with a bucket lock held: see page_cache.h for the
 * lock order), the page map (lock-free reads; the class entries of the
 * bucket's own spans), common/os.h (never-used slots' pages, no lock held). */
#include "stage2_centralcache/central_cache.h"

#include <stddef.h>

#include "common/fatal.h"
#include "common/free_list.h"
#include "common/harden.h"
#include "common/os.h"
#include "common/size_class.h"
#include "common/trace.h"
#include "common/track.h"
#include "stage3_pagecache/central_cache_internal.h"
#include "stage3_pagecache/page_cache.h"
#include "stage3_pagecache/span.h"
#include "stage3_pagecache/transfer_cache.h"

size_t cc_spares_kept(unsigned cls) {
    if (sc_size(cls) > CC_SPARES_MAX_SIZE)
        return 1;
    size_t n = CC_EMPTY_BYTES_KEPT / (sc_span_pages(cls) << HC_PAGE_SHIFT);
    return n > 0 ? n : 1;
}

/* May a span of `bytes` that just emptied stay as one more of the bucket's
 * spares? Yes while the bucket has none (its first costs nothing against the
 * total), else while it keeps fewer than `keep_empty` and the total of all
 * classes has room (cc_spare_charge). The bucket lock is held. */
static int cc_spare_count(cc_bucket *bucket, size_t keep_empty, size_t bytes) {
    if (bucket->empty_spans >= keep_empty)
        return 0;
    if (bucket->empty_spans > 0 && !cc_spare_charge(bucket, bytes))
        return 0;
    bucket->empty_spans++;
    return 1;
}

/* A spare (of `bytes`) leaves the bucket's list, reused or given back; lock held. */
static void cc_spare_uncount(cc_bucket *bucket, size_t bytes) {
    if (--bucket->empty_spans > 0)
        cc_spare_refund(bucket, bytes);
}

/* Takes a span for class `cls` from the page cache, for the bucket of
 * shard `shard`, and writes the class of its pages into the page map. Its
 * objects are carved lazily, in address order, by cc_take (span.h,
 * `carved`). Runs without any lock: nobody else knows the span yet. NULL
 * when the OS refused memory. */
static hc_span *cc_carve_new_span(unsigned cls, unsigned shard) {
    hc_span *span = pc_alloc_span_placed(sc_span_pages(cls), cls, shard);
    if (span == NULL)
        return NULL;
    span->shard = (uint8_t)shard;
    span->free_objects = NULL;
    span->carved = 0;
    span->free_count = span->object_count;
    /* Hardened (common/harden.h): every slot carries its free tag from the
     * start, so a free of one never handed out stops at the call. */
    if (HC_HARDENED)
        for (uint32_t i = 0; i < span->object_count; i++)
            fl_set_next(span_start(span) + (size_t)i * span->object_size, NULL);
    pm_set_class_range(span->start_page, span->page_count, cls);
    return span;
}

/* A span that left its bucket goes back to the page cache: its pages stop
 * saying "class cls" first (a free of one of them is invalid from now on). */
static void cc_give_back_span(hc_span *span) {
    pm_set_class_range(span->start_page, span->page_count, 0);
    pc_free_span(span);
}

/* What cc_take cut off one span, linked into the caller's chain after the
 * bucket lock is dropped (the objects are the caller's once the counts say
 * so): a refill's misses on cold objects (a freed list walked to its end)
 * and its page faults (never-used slots first written) hold up no other
 * thread that wants the class. */
typedef struct cc_piece {
    void *first;        /* returned objects: the first of `count` linked ones; */
    void *last;         /* ... and the last, when the cut found it (NULL: walk) */
    char *fresh;        /* never-used slots: the first of `count` in a row (else NULL) */
    uint32_t count;
    uint32_t object_size;
    uint32_t backed_before; /* of those slots, the first this many (or all) are on backed pages */
} cc_piece;

/* Pieces one take can cut: each span gives at most two (its returned
 * objects, then never-used slots), and a take of HC_MAX_BATCH objects that
 * empties whole spans stops at one line's worth beyond that. A trip that
 * runs out of pieces takes fewer objects than it asked for, as any may. */
#define CC_TAKE_MAX_PIECES (2 * HC_MAX_BATCH + 2)

/* Moves up to `want` objects of class `cls` from the bucket's spans into
 * `pieces`, returning how many objects (and *piece_count); the bucket lock
 * is held. Objects come from the first span on the list until it is empty,
 * so a span in heavy use fills up and a quiet one can drain back to the page
 * cache. Within a span, objects that came back first (warm in some cache),
 * then never-used slots in whole cache lines (cc_fresh_count): `carved`
 * stays a multiple of cc_line_objects (or the span's end), so no two
 * batches' never-used objects share a line. Fewer than `want` rather than
 * split a line, unless nothing else came: then up to one line's worth more.
 * A span's whole list of returned objects is taken by its head alone; only
 * a part of one is walked here, to find where to cut. */
static uint32_t cc_take(cc_bucket *bucket, unsigned cls, uint32_t want, cc_piece *pieces,
                        uint32_t *piece_count) {
    uint32_t got = 0, n_pieces = 0;
    while (got < want && n_pieces + 2 <= CC_TAKE_MAX_PIECES) {
        if (span_list_empty(&bucket->spans)) {
            if (span_list_empty(&bucket->spares))
                break;
            if (got > 0 && got + cc_fresh_count(cls, want - got) > want)
                break; /* a whole line would overshoot `want`, as below */
            /* The spare that emptied last: its lines are the likeliest to
             * be in some cache still (the oldest, after a program cycled
             * through all of them, is in none). Carved again from its
             * first slot, as if new: the take hands out neighbours in
             * address order (the order the program then touches them in,
             * page by page, which the hardware prefetches) and walks none
             * of the freed list, whose order was the frees'. */
            hc_span *spare = bucket->spares.next;
            span_list_remove(spare);
            cc_spare_uncount(bucket, span_bytes(spare));
            spare->free_objects = NULL;
            spare->slots_backed = spare->carved > spare->slots_backed ? spare->carved : spare->slots_backed;
            spare->carved = 0;
            span_list_push(&bucket->spans, spare);
        }
        hc_span *span = bucket->spans.next;
        uint32_t never_used = span->object_count - span->carved;
        uint32_t returned = span->free_count - never_used;
        uint32_t from_returned = returned < want - got ? returned : want - got;
        uint32_t from_fresh = 0;
        if (got + from_returned < want && never_used > 0) {
            from_fresh = cc_fresh_count(cls, want - got - from_returned);
            if (got + from_returned > 0 && got + from_returned + from_fresh > want)
                from_fresh = 0; /* the rest of the line waits for a later fetch */
            else if (from_fresh > never_used)
                from_fresh = never_used;
        }
        if (from_returned + from_fresh == 0)
            break; /* got > 0: a whole line would overshoot `want` */
        if (from_returned > 0) {
            cc_piece *piece = &pieces[n_pieces++];
            *piece = (cc_piece){span->free_objects, NULL, NULL, from_returned, 0, 0};
            if (from_returned == returned) {
                span->free_objects = NULL;
            } else {
                void *cut = span->free_objects;
                for (uint32_t i = 1; i < from_returned; i++)
                    cut = fl_next(cut);
                span->free_objects = fl_next(cut);
                piece->last = cut;
            }
        }
        if (from_fresh > 0) {
            uint32_t backed = span->slots_backed > span->carved ? span->slots_backed - span->carved : 0;
            pieces[n_pieces++] = (cc_piece){NULL, NULL, span_start(span) + (size_t)span->carved * span->object_size,
                                            from_fresh, span->object_size, backed};
            span->carved = (uint16_t)(span->carved + from_fresh);
        }
        span->free_count -= from_returned + from_fresh;
        span->objects_in_use += from_returned + from_fresh; /* the references the page cache must wait for */
        got += from_returned + from_fresh;
        if (span->free_count == 0) {
            span_list_remove(span);
            span->in_bucket_list = 0;
        }
    }
    cc_add_free_objects(bucket, -(long)got);
    *piece_count = n_pieces;
    return got;
}

/* Links what cc_take cut into one NULL-terminated chain first..last; no
 * lock held. A whole list of returned objects is walked here to its end,
 * its links already in place; never-used slots get theirs written. */
static void cc_link_pieces(const cc_piece *pieces, uint32_t n_pieces, void **first, void **last) {
    void *head = NULL, *tail = NULL;
    for (uint32_t p = 0; p < n_pieces; p++) {
        const cc_piece *piece = &pieces[p];
        void *piece_first, *piece_last;
        if (piece->fresh != NULL) {
            piece_first = piece->fresh;
            piece_last = piece->fresh + (size_t)(piece->count - 1) * piece->object_size;
            char *first_unbacked = piece->fresh + (size_t)piece->backed_before * piece->object_size;
            if (!HC_HARDENED && first_unbacked <= (char *)piece_last) /* hardened: written at the carve */
                os_back_before_writes(first_unbacked, (size_t)((char *)piece_last - first_unbacked),
                                      piece->object_size);
            for (char *slot = piece->fresh; slot != piece_last; slot += piece->object_size)
                fl_set_next(slot, slot + piece->object_size);
        } else {
            piece_first = piece->first;
            piece_last = piece->last;
            if (piece_last == NULL) {
                piece_last = piece_first;
                for (uint32_t i = 1; i < piece->count; i++)
                    piece_last = fl_next(piece_last);
            }
        }
        if (tail != NULL)
            fl_set_next(tail, piece_first);
        else
            head = piece_first;
        tail = piece_last;
    }
    if (tail != NULL)
        fl_set_next(tail, NULL);
    *first = head;
    *last = tail;
}

static void cc_sweep_idle(size_t now);

size_t cc_carved_pages;

/* A span of `pages` pages is about to be carved: the heap grows by it unless
 * free pages can be had. Every CC_SWEEP_EVERY_PAGES pages, the classes
 * nobody fetched from while the last CC_SWEEP_PAGES were carved give back
 * what they cache, first, so that this span and the next can reuse it
 * (cc_sweep_idle). No lock held. */
static void cc_note_carve(size_t pages) {
    size_t after = __atomic_add_fetch(&cc_carved_pages, pages, __ATOMIC_RELAXED);
    if ((after - pages) / CC_SWEEP_EVERY_PAGES != after / CC_SWEEP_EVERY_PAGES)
        cc_sweep_idle(after);
}

uint32_t cc_trip_batches(unsigned cls) {
    size_t rows = CC_TRIP_MAX_BYTES / ((size_t)sc_batch(cls) * sc_size(cls));
    return rows < 1 ? 1 : rows > CC_TRIP_MAX_BATCHES ? CC_TRIP_MAX_BATCHES : (uint32_t)rows;
}

/* A trip: at most CC_TRIP_MAX_BYTES of objects, read again by
 * cc_transfer_return or cc_group_runs while they are in the cache. */
uint32_t cc_return_max(unsigned cls) { return cc_trip_batches(cls) * sc_batch(cls); }

/* Pops up to `want` objects off the transfer cache of `bucket`, whose lock
 * is held, and drops the lock; links them into a chain first..last.
 * Returns how many (0: the transfer cache was empty). */
static uint32_t cc_fetch_batches(cc_bucket *bucket, unsigned cls, uint32_t want, void **first, void **last) {
    void *objects[CC_TRIP_MAX_BATCHES * HC_MAX_BATCH]; /* a trip's rows */
    uint32_t row_ends[CC_TRIP_MAX_BATCHES], rows;
    uint32_t got = cc_transfer_pop(bucket, want, objects, row_ends, &rows);
    hc_lock_unlock(&bucket->lock);
    if (got == 0)
        return 0;
    cc_pull_objects(objects, got);
    cc_link_rows(objects, row_ends, rows); /* ours now: no other thread reads them */
    *first = objects[0];
    *last = objects[got - 1];
    cc_check_chain(cls, *first, got);
    return got;
}

/* Whole batches from another shard's transfer cache: one that is full
 * (`full_only`), or, when the calling thread could not get a new span, any
 * with a batch. A peek without the lock skips the others. Returns how many
 * objects, 0 if no shard had what was asked. */
static uint32_t cc_fetch_other_shards(unsigned own, unsigned cls, uint32_t want, void **first, void **last,
                                      int full_only) {
    for (unsigned i = 1; i < CC_SHARDS; i++) {
        cc_bucket *other = cc_shard_bucket((own + i) % CC_SHARDS, cls);
        uint32_t batches = __atomic_load_n(&other->batch_count, __ATOMIC_RELAXED);
        if (batches == 0 || (full_only && batches < other->batch_capacity))
            continue;
        cc_lock_bucket(other);
        cc_note_fetched(other);
        uint32_t got = cc_fetch_batches(other, cls, want, first, last);
        if (got > 0)
            return got;
    }
    return 0;
}

/* Where a fetch looks, in order: its own shard's transfer cache (where
 * cc_return sends its spans' objects home), its own spans and spares (lines
 * its core wrote last); a full transfer cache of another shard; a new span
 * among its shard's others; if the page cache has none, any shard's batches.
 * When its own shard looks empty (a peek without the lock), the full ones
 * come first. A batch in a transfer cache that is not full is for its own
 * threads: two threads of `hold` that took each other's at the end of each
 * round wrote lines the other had just written. */
uint32_t cc_fetch(unsigned cls, uint32_t want, void **first, void **last) {
    HC_TRACE(HC_TRACE_CC_FETCH, cls);
    const unsigned shard = cc_current_shard();
    cc_bucket *bucket = cc_shard_bucket(shard, cls);
    uint32_t got;
    const int own_looks_empty = __atomic_load_n(&bucket->batch_count, __ATOMIC_RELAXED) == 0 &&
                                __atomic_load_n(&bucket->free_objects, __ATOMIC_RELAXED) == 0;
    if (own_looks_empty && (got = cc_fetch_other_shards(shard, cls, want, first, last, 1)) > 0)
        return got;
    cc_lock_bucket(bucket);
    cc_note_fetched(bucket);
    if (bucket->batch_count > 0)
        return cc_fetch_batches(bucket, cls, want, first, last);
    cc_piece pieces[CC_TAKE_MAX_PIECES];
    uint32_t n_pieces;
    got = cc_take(bucket, cls, want, pieces, &n_pieces);
    hc_lock_unlock(&bucket->lock);
    if (got > 0) {
        cc_link_pieces(pieces, n_pieces, first, last);
        return got;
    }
    if (!own_looks_empty && (got = cc_fetch_other_shards(shard, cls, want, first, last, 1)) > 0)
        return got;

    /* No span of this shard has a free object, and no other shard has a
     * full transfer cache: take a new span from the page cache with no
     * bucket lock held, then hand out from it. */
    cc_note_carve(sc_span_pages(cls));
    hc_span *span = cc_carve_new_span(cls, shard);
    if (span == NULL)
        return cc_fetch_other_shards(shard, cls, want, first, last, 0); /* else errno = ENOMEM */
    cc_lock_bucket(bucket);
    span_list_push(&bucket->spans, span);
    span->in_bucket_list = 1;
    cc_add_free_objects(bucket, span->free_count);
    bucket->span_bytes += span_bytes(span);
    got = cc_take(bucket, cls, want, pieces, &n_pieces);
    hc_lock_unlock(&bucket->lock);
    cc_link_pieces(pieces, n_pieces, first, last);
    return got;
}

/* The span of an object given back to class `cls`'s bucket, looked up with
 * no lock held. The page map entry is current, since the object is in use;
 * anything else would corrupt the span, so it stops the program. Such an
 * object got onto a thread's list unchecked: a wrong size or a foreign
 * pointer given to hc_free_sized (whose fast path does not look at the page
 * map), or a list corrupted by a double free or a write after free (its link
 * word is garbage, often 0). A default build finds it only here, when its
 * batch comes back, and only if it has not been handed out first as an
 * object of the wrong class: a too-large class then overflows into the next
 * object (docs/design.md, section 6). A debug build (HC_DEBUG) catches both
 * mistakes at the call. The caller checks that it is the start of an
 * object; the count is checked later, under the lock. */
static hc_span *cc_span_of_object(unsigned cls, void *obj) {
    hc_span *span = pc_span_of(obj);
    if (HC_UNLIKELY(span == NULL || span->state != SPAN_SMALL || span->size_class != cls))
        hc_fatal_pointer_why("free(): invalid pointer", obj, HC_CORRUPT_LIST_WHY);
    return span;
}

/* Takes `span` (off every list) out of the bucket's counts and onto
 * `given_back`, to go back to the page cache once the lock is dropped; the
 * bucket lock is held. */
static void cc_detach_span(cc_bucket *bucket, hc_span *span, hc_span *given_back) {
    span->in_bucket_list = 0;
    cc_add_free_objects(bucket, -(long)span->free_count);
    bucket->span_bytes -= span_bytes(span);
    span_list_push(given_back, span);
}

/* Gives every span on `given_back` back to the page cache; no lock held. */
static void cc_give_back_spans(hc_span *given_back) {
    while (!span_list_empty(given_back)) {
        hc_span *span = given_back->next;
        span_list_remove(span);
        cc_give_back_span(span);
    }
}

/* A run of a chain's objects that belong to one span, in chain order: they
 * are linked to each other already, so the run joins its span's list with
 * one link written (its last object's) and one update of the span's counts.
 * A batch cut off a thread's list is mostly a few such runs (a list is
 * freed and refilled span by span), so the bucket lock is held per span,
 * not per object. */
typedef struct cc_run {
    hc_span *span;
    void *first;
    void *last;
    uint32_t count;
    uint32_t highest_index; /* of its objects in the span: each must have been carved */
} cc_run;

/* Cuts the chain from *cursor on into at most CC_RETURN_RUNS runs of at
 * most `n` objects in all, checking each object, with no lock held; returns
 * how many objects they hold, and *cursor moves past them (a link is
 * followed only while more of the chain's `n` come after it: its last link
 * need not be NULL). An object inside the current run's span needs no
 * page-map lookup (the span's class and state were checked for the run's
 * first): a range test and an index computed from locals. */
static uint32_t cc_group_runs(unsigned cls, void **cursor, uint32_t n, cc_run *runs, uint32_t *n_runs) {
    void *obj = *cursor;
    uint32_t runs_made = 0, i;
    uintptr_t start = 0, bytes = 0; /* the run's span: its objects' bytes [start, start + bytes) */
    uint64_t size = 0, reciprocal = 0;
    cc_run *run = NULL;
    for (i = 0; i < n; i++) {
        uintptr_t offset = (uintptr_t)obj - start;
        if (offset >= bytes) { /* another span (or none yet): look it up */
            if (runs_made == CC_RETURN_RUNS)
                break; /* this object starts the next lock hold's runs */
            hc_span *span = cc_span_of_object(cls, obj);
            start = (uintptr_t)span_start(span);
            size = span->object_size;
            reciprocal = span->size_reciprocal;
            bytes = (uintptr_t)span->object_count * size;
            offset = (uintptr_t)obj - start; /* in the span's tail: an index >= carved, caught below */
            run = &runs[runs_made++];
            *run = (cc_run){span, obj, obj, 0, 0};
        } else if (HC_UNLIKELY(run->last == obj)) { /* linked to itself: freed twice in a row */
            hc_fatal_pointer_why("free(): double free detected of", obj, HC_CORRUPT_LIST_WHY);
        }
        /* span_object_index's multiply; its bound is the run's, tested
         * against `carved` under the lock. */
        uint32_t index = (uint32_t)(((uint64_t)offset * reciprocal) >> 32);
        if (HC_UNLIKELY(index * size != offset))
            hc_fatal_pointer_why("free(): invalid pointer", obj, HC_CORRUPT_LIST_WHY);
        run->last = obj;
        run->count++;
        if (index > run->highest_index)
            run->highest_index = index;
        obj = i + 1 < n ? fl_next(obj) : NULL;
    }
    *cursor = obj;
    *n_runs = runs_made;
    return i;
}

/* Stops the program for `obj`, one of the objects of a chain coming home
 * that its span says cannot be (`why`), the bucket lock held. */
__attribute__((noreturn, cold)) static void cc_bad_return(cc_bucket *bucket, const char *what, void *obj,
                                                         const char *why) {
    hc_lock_unlock(&bucket->lock);
    hc_fatal_pointer_why(what, obj, why);
}

/* The bucket that owns `span` (its shard's bucket of class `cls`), with its
 * lock held: `held` is the bucket whose lock the caller holds (NULL for
 * none), dropped first when it is another one (never two at once). */
static cc_bucket *cc_lock_home_bucket(cc_bucket *held, const hc_span *span, unsigned cls) {
    cc_bucket *home = &cc_buckets[span->shard][cls]; /* set up: the span came from it */
    if (home != held) {
        if (held != NULL)
            hc_lock_unlock(&held->lock);
        cc_lock_bucket(home);
    }
    return home;
}

/* The transfer cache a chain's whole batches go to: its first object's
 * span's shard's (one page-map lookup a trip). A thread that frees what it
 * allocated gives back to its own shard; a consumer gives back to its
 * producer's, whose next fetch looks there first. */
static cc_bucket *cc_home_bucket_of(unsigned cls, void *first) {
    return cc_shard_bucket(cc_span_of_object(cls, first)->shard, cls);
}

/* Gives `n` objects, first.., back to their spans, at most `keep_empty`
 * empty spans staying in the bucket; the others go back to the page cache
 * once the lock is dropped. */
static void cc_return_to_spans(unsigned cls, void *first, uint32_t n, size_t keep_empty) {
    /* LAB BEGIN: span_refcount_drop */
    hc_span given_back; /* spans whose count dropped to zero, for the page cache */
    span_list_init(&given_back);
    cc_run runs[CC_RETURN_RUNS];
    void *obj = first;
    while (n > 0) {
        /* Lookups and grouping first, with no lock held. */
        uint32_t n_runs;
        n -= cc_group_runs(cls, &obj, n, runs, &n_runs);
        cc_bucket *bucket = NULL; /* whose lock is held: the run's span's (there is a run at least) */
        for (uint32_t r = 0; r < n_runs; r++) {
            cc_run *run = &runs[r];
            hc_span *span = run->span;
            bucket = cc_lock_home_bucket(bucket, span, cls);
            if (HC_UNLIKELY(span->objects_in_use < run->count)) /* more than it handed out: already home */
                cc_bad_return(bucket, "free(): invalid pointer", run->first, HC_CORRUPT_LIST_WHY);
            if (HC_UNLIKELY(run->highest_index >= span->carved))
                cc_bad_return(bucket, "free(): invalid pointer", run->first,
                              "a slot of its span that was never handed out");
            /* The cheap half of "already home": the last object to come
             * back to this span is the first of this run (a double free
             * whose two copies travelled together). A full check needs a
             * bit per object. */
            if (HC_UNLIKELY(span->free_objects == run->first))
                cc_bad_return(bucket, "free(): double free detected of", run->first, HC_CORRUPT_LIST_WHY);
            fl_set_next(run->last, span->free_objects);
            span->free_objects = run->first;
            span->free_count += run->count;
            cc_add_free_objects(bucket, run->count);
            if (!span->in_bucket_list) {
                span_list_push(&bucket->spans, span);
                span->in_bucket_list = 1;
            }
            span->objects_in_use -= run->count - 1; /* the run's others: its last one just below */
            if (--span->objects_in_use > 0)
                continue;
            /* Every object is back. The class keeps spares at the back of its
             * list (used last); beyond them the span leaves the bucket for the
             * page cache (after the lock is dropped). */
            span_list_remove(span);
            if (cc_spare_count(bucket, keep_empty, span_bytes(span))) {
                span_list_push(&bucket->spares, span);
                continue;
            }
            cc_detach_span(bucket, span, &given_back);
        }
        hc_lock_unlock(&bucket->lock);
    }
    cc_give_back_spans(&given_back);
    /* LAB END: span_refcount_drop */
}

void cc_return(unsigned cls, void *first, void *last, uint32_t n) {
    HC_TRACE(HC_TRACE_CC_RETURN, cls);
    cc_check_chain(cls, first, n);
    /* Whole batches go to their home shard's transfer cache while it has
     * room: the next cc_fetch there hands each out as it is. The rest goes
     * to the spans. (`last` is not needed: each batch's row is read off its
     * links.) */
    (void)last;
    if (n >= sc_batch(cls))
        first = cc_transfer_return(cc_home_bucket_of(cls, first), cls, first, &n);
    if (n > 0)
        cc_return_to_spans(cls, first, n, cc_spares_kept(cls));
}

/* Batches cc_give_back_bucket takes off a transfer cache per hold of the
 * lock: a bound on its stack frame (it runs on malloc's slow path, in
 * threads with small stacks too), not on what it gives back. */
#define CC_GIVE_BACK_BATCHES 64

/* Empties class `cls`'s transfer cache (the batches it held when called)
 * and gives its spare empty spans back to the page cache; the bucket lock
 * is held, and dropped here before any object goes back to its span. */
static void cc_give_back_bucket(unsigned cls, cc_bucket *bucket) {
    void *firsts[CC_GIVE_BACK_BATCHES];
    uint32_t counts[CC_GIVE_BACK_BATCHES];
    const uint32_t held = bucket->batch_count;
    uint32_t count = cc_transfer_take_top(bucket, CC_GIVE_BACK_BATCHES, firsts, counts);
    /* The spare empty spans: off the list, to go back below. */
    hc_span given_back;
    span_list_init(&given_back);
    while (!span_list_empty(&bucket->spares)) {
        hc_span *span = bucket->spares.next;
        span_list_remove(span);
        cc_spare_uncount(bucket, span_bytes(span));
        cc_detach_span(bucket, span, &given_back);
    }
    hc_lock_unlock(&bucket->lock);
    cc_give_back_spans(&given_back);
    for (uint32_t taken = count;; taken += count) {
        for (uint32_t i = 0; i < count; i++)
            cc_return_to_spans(cls, firsts[i], counts[i], 0);
        if (count < CC_GIVE_BACK_BATCHES || taken >= held)
            return;
        cc_lock_bucket(bucket);
        count = cc_transfer_take_top(bucket, held - taken < CC_GIVE_BACK_BATCHES ? held - taken : CC_GIVE_BACK_BATCHES,
                                     firsts, counts);
        hc_lock_unlock(&bucket->lock);
    }
}

void cc_give_back_cached(void) {
    for (unsigned shard = 0; shard < CC_SHARDS; shard++)
        for (unsigned cls = 1; cls < HC_NUM_CLASSES; cls++) {
            cc_bucket *bucket = cc_shard_bucket(shard, cls);
            cc_lock_bucket(bucket);
            cc_give_back_bucket(cls, bucket);
        }
}

/* A class nobody fetched from while CC_SWEEP_PAGES pages were carved (the
 * clock: `now`) is idle: a program moved on from it (strings grown by
 * realloc pass through every class on their way up; a phase of one size
 * ends, the next begins). What its transfer cache and spare spans hold
 * (up to CC_TRANSFER_MAX_BYTES and CC_EMPTY_BYTES_KEPT) would otherwise wait
 * for a fetch that may never come while the heap grows for other classes. */
static int cc_bucket_idle(cc_bucket *bucket, size_t now) {
    size_t fetched_at = __atomic_load_n(&bucket->fetched_at, __ATOMIC_RELAXED);
    return fetched_at <= now && now - fetched_at >= CC_SWEEP_PAGES; /* a fetch since `now`: in use */
}

static void cc_sweep_idle(size_t now) {
    /* Set up by the fetch before any carve: read directly, not through cc_shard_bucket. */
    for (unsigned shard = 0; shard < CC_SHARDS; shard++)
        for (unsigned cls = 1; cls < HC_NUM_CLASSES; cls++) {
            cc_bucket *bucket = &cc_buckets[shard][cls];
            /* Never used, or fetched from lately: no lock to take. */
            if (!__atomic_load_n(&bucket->touched, __ATOMIC_RELAXED) || !cc_bucket_idle(bucket, now))
                continue;
            cc_lock_bucket(bucket);
            if (cc_bucket_idle(bucket, now) && (bucket->batch_count > 0 || bucket->empty_spans > 0))
                cc_give_back_bucket(cls, bucket);
            else
                hc_lock_unlock(&bucket->lock);
        }
}
