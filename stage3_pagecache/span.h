/* stage3_pagecache/span.h — layer 3: the span, a run of whole pages.
 *
 * Every page the allocator hands out belongs to exactly one span. A span is
 * in one of three states, and who may write which field follows from it:
 *
 *   SPAN_FREE   in the page cache, waiting to be split or merged.
 *   SPAN_SMALL  carved into objects of one size class, owned by that class's
 *               central bucket; objects_in_use counts the objects outside
 *               the bucket (in thread caches or with the program).
 *   SPAN_LARGE  handed to the program whole, as one large block.
 *
 * The page cache (its lock held) writes start_page, page_count, state and
 * the class geometry; the central bucket (its lock held) writes the object
 * list, objects_in_use and the list links while the span is SPAN_SMALL.
 * Readers without a lock (the central cache's object-to-span lookups,
 * hc_usable_size, hc_realloc, and hc_free in a debug build; the default build's
 * hc_free reads the page map's class entry instead) read only fields that
 * cannot change while the pointer they hold is out: a span cannot leave
 * SPAN_SMALL while one of its objects is in use, nor SPAN_LARGE before its
 * block is freed. No bitfields: each field is its own memory location, so a
 * bucket writing one never races with a reader of another.
 *
 * Records come from common/pool.h (never malloc), a pool per place
 * (span_records.c). A record that dies (its pages merged into a neighbour)
 * is marked SPAN_DEAD before it goes back to its pool, so a stale page-map
 * entry that still points at it is recognised.
 * May touch: nothing; this header only describes the record. */
#ifndef HC_SPAN_H_
#define HC_SPAN_H_

#include <stddef.h>
#include <stdint.h>

#include "common/compiler.h"
#include "common/size_class.h"

typedef enum span_state {
    SPAN_DEAD = 0, /* back in the pool (a zeroed record reads as dead) */
    SPAN_FREE,
    SPAN_SMALL,
    SPAN_LARGE,
} span_state;

#if HC_DEBUG
/* One bit per object handed to the program, for catching double frees.
 * 1024 = the most objects a span holds (one page of class 1's 8-byte
 * objects, which only the central cache's tests carve; 512 of 16 bytes is
 * the most a request's class gives). */
#define SPAN_DEBUG_MAX_OBJECTS 1024
#endif

typedef struct hc_span {
    /* The pool links free records through the first word: keep `state`
     * elsewhere so that a dead record still reads as SPAN_DEAD.
     * A span is on at most one list or tree at a time, so the two links
     * double as a tree node's children: a free span longer than the page
     * cache's exact-length lists sits in its tree (page_cache.c), not on a
     * list, and uses left/right instead of next/prev. */
    union {
        struct {
            struct hc_span *next;
            struct hc_span *prev;
        };
        struct {
            struct hc_span *left;  /* SPAN_FREE, long: shorter (or same length, lower) */
            struct hc_span *right; /* SPAN_FREE, long: longer (or same length, higher) */
        };
    };
    uintptr_t start_page;    /* address >> HC_PAGE_SHIFT */
    size_t page_count;
    uint8_t state;           /* span_state */
    uint8_t direct;          /* mapped straight from the OS (very large): unmapped when freed */
    uint8_t size_class;      /* SPAN_SMALL: its class; else 0 */
    uint8_t in_bucket_list;  /* SPAN_SMALL: on its bucket's list of spans with free objects */
    uint8_t shard;           /* SPAN_SMALL: which of its class's buckets owns it (transfer_cache.h, CC_SHARDS) */
    uint8_t record_place;    /* which place's pool the record came from (span_records.c) */
    /* SPAN_SMALL geometry, fixed while the span is SPAN_SMALL. */
    uint16_t object_count;   /* at most 1024 (span.h's bound above) */
    /* SPAN_SMALL, under the bucket lock: objects [0, carved) have been
     * handed out at least once (they are in use or on free_objects); the
     * rest were never touched. So a free of a slot at or past it is caught
     * when the slot comes home, and a new span costs no pass over its
     * objects. */
    uint16_t carved;
    /* SPAN_SMALL, under the bucket lock: objects not handed out, and the
     * reference count of those that are (16 bits: at most object_count). */
    uint16_t free_count;
    uint16_t objects_in_use;
    /* SPAN_SMALL, under the bucket lock: slots below this index lie on
     * pages already backed: written before (a spare is carved again from
     * slot 0), or every slot when the page cache handed the span out over
     * pages that may all be resident (dirty_pages). central_cache.c asks
     * the OS to back only the others. */
    uint16_t slots_backed;
    union {
        struct {
            uint32_t object_size;     /* SPAN_SMALL */
            uint32_t size_reciprocal; /* ceil(2^32 / object_size): offset -> index without a divide */
        };
        /* SPAN_FREE, under the page cache lock: at most this many of its
         * pages may hold anything but zeros. The others were never handed
         * out since the OS mapped them, or were released since: they read
         * as zero pages. Never more than backed_pages. Merging adds, a
         * split gives each piece at most its length, like backed_pages; a
         * new record says every page (span_new), the safe side. SPAN_LARGE:
         * the count as it was when the span was handed out, which hc_calloc
         * reads then (0: nothing to clear). */
        size_t dirty_pages;
    };
    union {
        void *free_objects;  /* SPAN_SMALL, under the bucket lock */
        /* SPAN_FREE, under the page cache lock: at most this many of its
         * pages may be resident; the others were given back to the OS
         * (madvise, when a release policy asks: page_policy.h) and read as
         * zero pages when touched. Shares its word with free_objects (the
         * two states never overlap), so the record stays one 64-byte cache
         * line. */
        size_t backed_pages;
        /* SPAN_LARGE: a hook word, the record a later layer keeps for a
         * block it watches (block_hooks.h); NULL for every other block,
         * and no stage-3 code reads it. span_hand_out clears the word
         * (backed_pages = 0), and pc_free_span sets backed_pages over it. */
        void *layer_record;
    };
#if HC_DEBUG
    uint64_t debug_live[SPAN_DEBUG_MAX_OBJECTS / 64]; /* atomic bit ops only */
#endif
} hc_span;
#if !HC_DEBUG && !defined(__cplusplus)
_Static_assert(sizeof(hc_span) == 64, "a span record is one cache line");
#endif

HC_INLINE uintptr_t span_page_of(const void *p) { return (uintptr_t)p >> HC_PAGE_SHIFT; }

HC_INLINE char *span_start(const hc_span *s) { return (char *)(s->start_page << HC_PAGE_SHIFT); }

HC_INLINE size_t span_bytes(const hc_span *s) { return s->page_count << HC_PAGE_SHIFT; }

HC_INLINE uintptr_t span_end_page(const hc_span *s) { return s->start_page + s->page_count; }

HC_INLINE int span_covers(const hc_span *s, uintptr_t page) {
    return page >= s->start_page && page < span_end_page(s);
}

/* Index of the object at `p` in a SPAN_SMALL span, or -1 if p is not the
 * start of one (an interior pointer, the unused tail of the span, or any
 * address outside the span: index < object_count and index * size == offset
 * imply offset < object_count * size, so this is a bounds check too).
 * offset * ceil(2^32/size) >> 32 is exactly offset/size whenever offset is a
 * multiple of size below 2^32 (the rounding error stays under one); for any
 * other offset the result times size cannot equal offset, so the check after
 * it rejects the pointer either way. One multiply, no divide. */
HC_INLINE long span_object_index(const hc_span *s, const void *p) {
    uint64_t offset = (uint64_t)((const char *)p - span_start(s));
    uint64_t index = (offset * s->size_reciprocal) >> 32;
    if (HC_UNLIKELY(index * s->object_size != offset || index >= s->object_count))
        return -1;
    return (long)index;
}

/* ---- Doubly linked span lists with a sentinel head ------------------------- */

HC_INLINE void span_list_init(hc_span *head) { head->next = head->prev = head; }

HC_INLINE int span_list_empty(const hc_span *head) { return head->next == head; }

HC_INLINE void span_list_push(hc_span *head, hc_span *s) {
    s->next = head->next;
    s->prev = head;
    head->next->prev = s;
    head->next = s;
}

HC_INLINE void span_list_remove(hc_span *s) {
    s->prev->next = s->next;
    s->next->prev = s->prev;
    s->next = s->prev = NULL;
}

#endif /* HC_SPAN_H_ */
