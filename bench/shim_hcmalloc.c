/* bench/shim_hcmalloc.c — bench/alloc_shim.h through a stage linked in:
 * hc_malloc / hc_free_sized, the sized API, which is less work than free()
 * (the tables label these rows "sized API, linked in").
 * May touch: the stage's public API (common/hcmalloc.h). */
#include <stddef.h>

#include "bench/alloc_shim.h"

void *bench_malloc(size_t size) { return hc_malloc(size); }

void bench_free(void *ptr, size_t size) { hc_free_sized(ptr, size); }

void *bench_realloc(void *ptr, size_t size) { return hc_realloc(ptr, size); }

int bench_has_realloc(void) { return (hc_features() & HC_FEATURE_UNSIZED_FREE) != 0; }

const char *bench_allocator_name(void) { return hc_stage_name(); }

int bench_allocator_stats(hc_stats *out) {
    hc_get_stats(out);
    return 1;
}

/* The heap maps are drawn by stage 4's traced drop-in under the plain
 * driver (bench.py --heapmap); a stage linked in has no hc_dump_heap_svg. */
bench_heap_svg_fn bench_heap_svg_writer(void) { return NULL; }
