/* stage4_reclaim/page_release.c — layer 4's release policy for the page
 * cache: free pages go back to the OS once they have stayed unused for a
 * while. Stage 3's page cache calls it (stage3_pagecache/page_policy.h);
 * diff this file against stage3_pagecache/page_policy.c, whose hooks do
 * nothing.
 *
 * The delay is HCMALLOC_RELEASE_DELAY_MS (default 1000 ms), divided by
 * HCMALLOC_RELEASE_RATE (0 = never). No thread and no timer: every
 * page-cache call (span-sized work, under pc_lock) first reads a coarse clock
 * (CLOCK_MONOTONIC_COARSE: a few ns, no system call) and then
 *   - if no page-cache call came for a whole delay, nothing changed since
 *     the last one: every backed free page has been idle that long, and all
 *     of them go back (an idle program's RSS falls at its next slow path);
 *   - else, once per delay (a window), the fewest backed free pages seen at
 *     any call in the window -- pages no request needed during the whole
 *     window -- go back, the longest spans first.
 * A program that frees and reallocates the same amount in a loop keeps its
 * working set backed, whatever its block sizes, and makes at most a few
 * madvise calls per window (a byte-count credit, tried before, released
 * spans the loop faulted straight back in). The page cache releases
 * (pc_release_free_pages_locked); this file decides when and how much.
 * May touch: the page cache through page_policy.h, the options. */
#define _GNU_SOURCE /* CLOCK_MONOTONIC_COARSE */
#include "stage4_reclaim/page_release.h"

#include <stdint.h>
#include <time.h>

#include "common/size_class.h"
#include "stage3_pagecache/page_policy.h"
#include "stage4_reclaim/options.h"

/* All under pc_lock: the hooks are called with it held. */
static size_t heap_limit_pages;      /* HCMALLOC_HEAP_LIMIT_MB in pages; 0 = no limit */
static size_t heap_limit_refusals;   /* written under pc_lock, read by stats with relaxed loads */
static int release_enabled;          /* HCMALLOC_RELEASE_RATE != 0 */
static uint64_t release_delay_ms;    /* idle this long, free pages go back */
static uint64_t last_call_ms;        /* the previous page-cache call */
static uint64_t window_start_ms;
static size_t window_low_backed;     /* fewest backed free pages at a call since window_start_ms */

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts); /* vDSO, no system call; ticks of a few ms */
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void pc_policy_init(void) {
    const hc_options *o = hc_get_options(); /* getenv: no malloc */
    release_enabled = o->release_rate != 0;
    release_delay_ms = release_enabled ? o->release_delay_ms / o->release_rate : 0;
    heap_limit_pages = o->heap_limit_mb > (SIZE_MAX >> 20) ? SIZE_MAX >> HC_PAGE_SHIFT
                                                          : (o->heap_limit_mb << 20) >> HC_PAGE_SHIFT;
}

/* ---- The heap limit --------------------------------------------------------------
 * Counts what the page cache maps (pc_mapped_pages_locked: regions and
 * direct blocks, released pages included, since their addresses stay
 * mapped): a hard bound, like ulimit -v for the heap alone. A refused call
 * fails with ENOMEM through the normal path; the malloc slow path may then
 * give back what the thread and central caches hold (their spans merge in
 * the page cache) and retry once: that rescue is the slow path's. */
int pc_policy_may_grow(size_t pages, int headroom) {
    size_t mapped = pc_mapped_pages_locked();
    if (heap_limit_pages == 0 || (mapped <= heap_limit_pages && pages <= heap_limit_pages - mapped))
        return 1;
    if (!headroom) /* a request refused, not just its headroom: the limit was hit */
        __atomic_store_n(&heap_limit_refusals, heap_limit_refusals + 1, __ATOMIC_RELAXED);
    return 0;
}

/* ---- Huge pages ---------------------------------------------------------------
 * Past HCMALLOC_HUGE_HEAP_MB (default 4 MiB; 0: never) of heap: a heap
 * that big has its first 4 MiB in 4 KiB pages and rounds up only what it
 * grows by after, where one touched byte makes a whole 2 MiB resident; in
 * exchange a first touch costs one fault per 2 MiB, not 512. A
 * release of a span inside a huge page (above) splits it back into 4 KiB
 * pages. A small program never gets one. */
size_t pc_policy_huge_heap_bytes(void) {
    size_t mb = hc_get_options()->huge_heap_mb;
    return mb == 0 || mb > (SIZE_MAX >> 20) ? SIZE_MAX : mb << 20;
}

size_t pc_heap_limit_bytes(void) {
    size_t mb = hc_get_options()->heap_limit_mb;
    return mb > (SIZE_MAX >> 20) ? SIZE_MAX : mb << 20;
}

size_t pc_heap_limit_refusals(void) { return __atomic_load_n(&heap_limit_refusals, __ATOMIC_RELAXED); }

void pc_policy_before_call(void) {
    if (!release_enabled)
        return;
    uint64_t now = now_ms();
    size_t backed = pc_backed_free_pages_locked();
    if (backed < window_low_backed)
        window_low_backed = backed;
    int idle = now - last_call_ms >= release_delay_ms;
    if (idle || now - window_start_ms >= release_delay_ms) {
        size_t want = idle ? backed : window_low_backed;
        if (want > 0)
            pc_release_free_pages_locked(want);
        window_start_ms = now;
        window_low_backed = pc_backed_free_pages_locked();
    }
    last_call_ms = now;
}

/* The window's low-water mark; with no delay at all, what was freed goes
 * back at once. Also run after pc_release_free_pages. */
void pc_policy_after_call(void) {
    size_t backed = pc_backed_free_pages_locked();
    if (release_enabled && release_delay_ms == 0 && backed > 0)
        backed -= pc_release_free_pages_locked(SIZE_MAX);
    if (backed < window_low_backed)
        window_low_backed = backed;
}

size_t pc_release_all(void) { return pc_release_free_pages(SIZE_MAX); }
