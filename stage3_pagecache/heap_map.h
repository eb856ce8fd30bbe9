/* stage3_pagecache/heap_map.h — a picture of the page heap (stage 3's, which
 * stage 4 keeps).
 *
 * hc_dump_heap_svg draws the heap as it is at one moment: every run of
 * contiguous heap address space as a strip of pages, each span coloured by
 * its state (small, with its size class; large; directly mapped; free and
 * backed; free and released to the OS), with a legend and the totals of
 * hc_get_stats. Stages 1 and 2 have no page heap to draw (stage 1 carves
 * per-thread chunks, stage 2 keeps spans in the central cache for good and
 * knows no span once carved), so they have no such function.
 * May touch: nothing itself; heap_map.c reads the page cache through
 * pc_visit_spans and the stats through hc_get_stats. */
#ifndef HC_HEAP_MAP_H_
#define HC_HEAP_MAP_H_


#ifdef __cplusplus
extern "C" {
#endif

/* Writes an SVG image of the heap to file descriptor `fd`, through a fixed
 * stack buffer and write(2): no allocation, so a program may call it from
 * anywhere, even with hcmalloc as its malloc. Returns 0, or -1 with errno
 * set by write(2). The page cache lock is held while the spans are drawn;
 * the totals come from hc_get_stats just before, so in a program whose
 * threads are quiet they match the spans exactly. Give it a file: a pipe
 * whose reader is a thread of this process that calls malloc could wait on
 * that lock while the dump waits on the pipe. */
int hc_dump_heap_svg(int fd);

#ifdef __cplusplus
}
#endif

#endif /* HC_HEAP_MAP_H_ */
