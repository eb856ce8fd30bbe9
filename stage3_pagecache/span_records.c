/* stage3_pagecache/span_records.c — layer 3: where span records come from,
 * a pool for each place.
 *
 * A span's record is one 64-byte line (span.h), and while the span is
 * SPAN_SMALL the threads of the shard that carved it read and write it on
 * every trip between a thread cache and the span (free_count,
 * objects_in_use, the object list). From one pool, the records of two
 * shards' spans were made in the order the shards carved, so they
 * alternated line by line, as the spans' pages had before each shard had a
 * place: a line one core wrote sat next to a line the other core wrote,
 * and a core fetches more than the line it misses on. At `hold`'s two
 * threads, cc_span_of_object's read of a record took about four times one
 * thread's samples for the same work; with the records spaced 128 bytes
 * apart, half as many (docs/benchmarks.md, section 22).
 *
 * So each place has a pool of its own (pc_places[place].records, chunks of
 * their own from the OS), and a record made while a place's span is cut
 * comes from it: the record of the piece left after the span, which the
 * place's next span is cut from, too. A record that dies goes back to the
 * pool it came from (record_place), so each place's records stay together
 * through every split and merge. Spans of no place (large blocks, the
 * pieces a large block leaves) use pc_places[PC_NO_PLACE].records. A
 * place's dead records serve only that place, so what this costs in
 * metadata is at most a partly used chunk (common/pool.h) per pool.
 * May touch: the record pools, under pc_lock (each pool's own lock too, as
 * common/pool.h takes it). */
#include <stdint.h>

#include "common/pool.h"
#include "stage3_pagecache/page_cache_internal.h"
#include "stage3_pagecache/span.h"

_Static_assert(PC_PLACES < 256, "record_place is a byte");

pc_place pc_places[PC_PLACES + 1] = {
    [0 ... PC_PLACES] = {0, HC_POOL_INITIALIZER(sizeof(hc_span))},
};
unsigned pc_record_place = PC_NO_PLACE;

hc_span *span_new(uintptr_t start_page, size_t pages) {
    hc_span *s = pool_alloc(&pc_places[pc_record_place].records); /* zeroed */
    if (s == NULL)
        return NULL;
    s->start_page = start_page;
    s->page_count = pages;
    s->dirty_pages = pages; /* until its creator knows better: calloc then clears */
    s->record_place = (uint8_t)pc_record_place;
    return s;
}

/* A record whose pages now belong to another span. Stale page-map entries
 * may still point at it: SPAN_DEAD tells every reader to ignore it. The
 * pool links it through its first word: record_place survives. */
void span_dead(hc_span *s) {
    s->state = SPAN_DEAD;
    pool_free(&pc_places[s->record_place].records, s);
}

/* A place's span cut from a free span that another place's (or no
 * place's) split left gets a record of the place's own. If none can be
 * had, the span keeps the record it has: only its line's neighbours differ. */
hc_span *span_record_in_place(hc_span *s) {
    if (s->record_place == pc_record_place)
        return s;
    hc_span *own = span_new(s->start_page, s->page_count);
    if (own == NULL)
        return s;
    own->backed_pages = s->backed_pages;
    own->dirty_pages = s->dirty_pages;
    own->direct = s->direct;
    span_dead(s); /* the page map's entries for it are rewritten as `own` is handed out */
    return own;
}

void pc_records_lock_all(void) {
    for (unsigned place = 0; place <= PC_NO_PLACE; place++)
        hc_lock_acquire(&pc_places[place].records.lock);
}

void pc_records_unlock_all(void) {
    for (unsigned place = PC_NO_PLACE + 1; place-- > 0;)
        hc_lock_unlock(&pc_places[place].records.lock);
}
