/* stage4_reclaim/leak_scan.c — layer 4, the leak check's conservative scan
 * (leak_scan.h says what it reads and what it misses).
 *
 * Marking is an explicit work list, not recursion: a list of a million
 * sampled nodes must not need a million frames. Each block is pushed once,
 * when first marked, so the list never holds more than n entries.
 * May touch: dl_iterate_phdr (leak_collect_roots only), pc_visit_spans (the page cache's lock, and
 * the heap's memory read-only), the loader's __libc_stack_end. */
#define _GNU_SOURCE
#include "stage4_reclaim/leak_scan.h"

#include <link.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/size_class.h"
#include "stage3_pagecache/page_cache.h"
#include "stage3_pagecache/span.h"

extern void *__libc_stack_end; /* the loader's: the main thread's stack at start */

typedef struct scan {
    leak_block *blocks;
    size_t n;
    size_t *work;
    size_t pushed;
    uintptr_t low, high; /* every block lies in [low, high) */
} scan;

/* The block holding address `a`, or -1: the last block starting at or below it. */
static long block_holding(const scan *s, uintptr_t a) {
    if (a < s->low || a >= s->high)
        return -1;
    size_t lo = 0, hi = s->n; /* the answer is below hi */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->blocks[mid].start <= a)
            lo = mid;
        else
            hi = mid;
    }
    return a < s->blocks[lo].end ? (long)lo : -1;
}

static void scan_range(scan *s, uintptr_t from, uintptr_t to) {
    from = (from + sizeof(uintptr_t) - 1) & ~(uintptr_t)(sizeof(uintptr_t) - 1);
    for (uintptr_t at = from; at + sizeof(uintptr_t) <= to; at += sizeof(uintptr_t)) {
        long i = block_holding(s, *(const uintptr_t *)at);
        if (i >= 0 && !s->blocks[i].reachable) {
            s->blocks[i].reachable = 1;
            s->work[s->pushed++] = (size_t)i;
        }
    }
}

static int add_object(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    leak_roots *roots = arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
            continue;
        if (roots->count == LEAK_MAX_SEGMENTS) {
            roots->truncated = 1;
            return 1;
        }
        roots->start[roots->count] = info->dlpi_addr + ph->p_vaddr;
        roots->end[roots->count] = roots->start[roots->count] + ph->p_memsz;
        roots->count++;
    }
    return 0;
}

void leak_collect_roots(leak_roots *roots) {
    roots->count = 0;
    roots->truncated = 0;
    dl_iterate_phdr(add_object, roots);
}

/* Heap spans in use, but not the sampled blocks' own (their words are read
 * only once they are marked). */
static void scan_span(void *arg, const pc_span_view *v) {
    scan *s = arg;
    if (v->state != SPAN_SMALL && v->state != SPAN_LARGE)
        return;
    uintptr_t start = v->start_page << HC_PAGE_SHIFT;
    long i = block_holding(s, start);
    if (i >= 0 && s->blocks[i].start == start)
        return;
    scan_range(s, start, start + (v->page_count << HC_PAGE_SHIFT));
}

void leak_scan(leak_block *blocks, size_t n, size_t *work, const leak_roots *roots,
               const void *stack_from) {
    if (n == 0)
        return;
    scan s = {.blocks = blocks, .n = n, .work = work, .low = blocks[0].start, .high = blocks[n - 1].end};
    for (size_t i = 0; i < n; i++)
        blocks[i].reachable = 0;
    for (size_t i = 0; i < roots->count; i++)
        scan_range(&s, roots->start[i], roots->end[i]);
    /* The main thread's stack runs from here up to where the loader found
     * it; another thread's bounds are not known without asking libc, which
     * allocates. */
    uintptr_t here = (uintptr_t)stack_from, top = (uintptr_t)__libc_stack_end;
    if (syscall(SYS_gettid) == getpid() && here < top)
        scan_range(&s, here, top);
    pc_visit_spans(scan_span, &s);
    while (s.pushed > 0) {
        const leak_block *b = &blocks[work[--s.pushed]];
        scan_range(&s, b->start, b->end);
    }
}
