/* stage3_pagecache/malloc_checks.h — what stage 3's malloc.c notes of each
 * block it hands out and takes back: the track.h hooks (Valgrind, ASan,
 * the bench's probes: common/track.h) and, in a debug build (HC_DEBUG),
 * one bit per small object that catches a double free or a wrong size at
 * the call. Included by malloc.c alone; apart so that file keeps to the
 * API and its paths.
 * May touch: spans (read; a debug build's bits), the page cache's lookup
 * (pc_span_of), the thread cache's lists (read), common/. */
#ifndef HC_STAGE3_MALLOC_CHECKS_H_
#define HC_STAGE3_MALLOC_CHECKS_H_

#include <stddef.h>
#include <stdint.h>

#include "common/compiler.h"
#include "common/fatal.h"
#include "common/free_list.h"
#include "common/size_class.h"
#include "common/track.h"
#include "stage3_pagecache/page_cache.h"
#include "stage3_pagecache/span.h"

/* ---- Debug checks: one bit per small object handed out -------------------------
 * Default builds compile these to the track.h hooks alone. The bits are
 * atomic because neighbours in one span are allocated and freed by
 * different threads at once; the order between one object's malloc and its
 * free is the program's own synchronisation. */

#if HC_DEBUG
static void debug_mark_live(void *p) {
    hc_span *span = pc_span_of(p);
    if (span == NULL || span->state != SPAN_SMALL)
        return; /* large blocks: the span's state says it all */
    long i = span_object_index(span, p);
    uint64_t bit = (uint64_t)1 << (i & 63);
    if (__atomic_fetch_or(&span->debug_live[i >> 6], bit, __ATOMIC_RELAXED) & bit)
        hc_fatal_pointer("malloc(): block handed out twice (freed twice before?)", p);
}

static void debug_mark_dead(hc_span *span, void *p) {
    long i = span_object_index(span, p);
    uint64_t bit = (uint64_t)1 << (i & 63);
    if (!(__atomic_fetch_and(&span->debug_live[i >> 6], ~bit, __ATOMIC_RELAXED) & bit))
        hc_fatal_pointer("free(): double free of", p);
}

/* hc_free_sized(p, size): p must be a live object of size's class. */
static void debug_check_sized_free(void *p, unsigned cls) {
    hc_span *span = pc_span_of(p);
    if (span == NULL || span->state != SPAN_SMALL || span_object_index(span, p) < 0)
        hc_fatal_pointer("free(): invalid pointer", p);
    if (span->size_class != cls)
        hc_fatal_pointer("free_sized(): wrong size for the block at", p);
    debug_mark_dead(span, p);
}
#endif

/* A block goes to the program. */
HC_INLINE void note_alloc(void *p, size_t size, int zeroed) {
#if HC_DEBUG
    debug_mark_live(p);
#endif
    track_alloc(p, size, zeroed);
}

/* A small block from a thread-cache list goes to the program. Free's tag,
 * which this stage's hc_free writes, is cleared here: stages 1 and 2 never
 * set it, so fl_pop clears it only in the hardened build (free_list.h). */
HC_INLINE void hand_out_small(void *obj, size_t size) {
    if (!FL_POP_CLEARS_TAG)
        fl_clear_tag(obj);
    note_alloc(obj, size, 0);
}

/* A small block of class `cls` comes back through hc_free_sized. */
HC_INLINE void note_free_sized(void *p, size_t size, unsigned cls) {
#if HC_DEBUG
    debug_check_sized_free(p, cls);
#else
    (void)cls;
#endif
    track_free(p, size);
}

/* A small block of class `cls` comes back through hc_free. Default builds
 * know what the page map said (p starts an object of a small span of class
 * cls); a debug build also finds the span and checks that the object is
 * handed out. */
HC_INLINE void note_free_unsized(void *p, unsigned cls) {
#if HC_DEBUG
    hc_span *span = pc_span_of(p);
    if (span == NULL || span->state != SPAN_SMALL || span->size_class != cls ||
        span_object_index(span, p) < 0)
        hc_fatal_pointer("free(): invalid pointer", p);
    debug_mark_dead(span, p);
#endif
    track_free(p, sc_size(cls));
}

/* A list the fast path found empty must say so: a count left over means a
 * cycle (a double free) was popped through. */
static void check_empty_list(const hc_free_list *list) {
    if (HC_UNLIKELY(fl_length(list) != 0))
        hc_fatal_pointer_why("malloc(): corrupted free list at", list,
                             "its count says objects are left: a double free or a write after free");
}

#endif /* HC_STAGE3_MALLOC_CHECKS_H_ */
