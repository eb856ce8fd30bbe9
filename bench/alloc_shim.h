/* bench/alloc_shim.h — the allocator under test, as the workloads call it.
 *
 * Two small files implement it, and bench/defs.bzl links one into each
 * driver: shim_malloc.c (malloc / free: glibc, or whatever LD_PRELOAD put
 * first, a peer or stage 4's drop-in) and shim_hcmalloc.c (a stage's
 * hc_malloc / hc_free_sized, linked in). The driver's own files are
 * compiled with -flto, so these one-line wrappers are inlined at link time:
 * a workload's loop calls malloc or hc_malloc itself, exactly as when the
 * driver was one file, and --callgrind counts only the allocator.
 * May touch: nothing; the shims touch the allocator and libc. */
#ifndef BENCH_ALLOC_SHIM_H
#define BENCH_ALLOC_SHIM_H

#include <stddef.h>

#include "common/hcmalloc.h" /* hc_stats, also for a preloaded drop-in hcmalloc */

void *bench_malloc(size_t size);
/* size: as passed to bench_malloc. malloc's free has no use for it (glibc
 * 2.36 has no free_sized; the peers find the size themselves). */
void bench_free(void *ptr, size_t size);
void *bench_realloc(void *ptr, size_t size);
/* Whether bench_realloc works: stages 1-2 find no block from its address. */
int bench_has_realloc(void);
/* The allocator this driver calls: a stage's name, or the file of the
 * library malloc resolves to (so that the runner can check a preload). */
const char *bench_allocator_name(void);
/* Fills *out and returns 1 when the allocator is an hcmalloc that reports
 * hc_get_stats (a stage, or the drop-in preloaded); else returns 0. */
int bench_allocator_stats(hc_stats *out);
/* hc_dump_heap_svg of a preloaded stage 4 that has it (the traced drop-in),
 * for the heap-map sampler; NULL otherwise. */
typedef int (*bench_heap_svg_fn)(int fd);
bench_heap_svg_fn bench_heap_svg_writer(void);

#endif
