/* bench/callgrind_loop.c — the fast path alone, for --callgrind.
 * May touch: the allocator under test (bench/alloc_shim.h). */
#include "bench/callgrind_loop.h"

#include <stddef.h>

#include "bench/alloc_shim.h"
#include "bench/harness.h"

/* bench.py runs this under callgrind and adds up the inclusive cost of the
 * calls bench_cg_loop makes (to malloc and free, and whatever they call):
 * the loop's own instructions are never counted. A warm-up loop first takes
 * the one-time costs (lazy symbol binding, creating the thread's cache, the
 * first refill); it takes the size as an argument so that the compiler
 * cannot fold the two loops into one function. Externally visible and
 * never cloned, so that the symbols keep these names under -flto. */

void bench_cg_warmup(long iterations, size_t size);
void bench_cg_loop(long iterations, size_t size);

__attribute__((noinline, noclone, externally_visible)) void bench_cg_warmup(long iterations, size_t size) {
    for (long i = 0; i < iterations; i++) {
        void *p = bench_malloc(size);
        escape(p);
        bench_free(p, size);
    }
}

__attribute__((noinline, noclone, externally_visible)) void bench_cg_loop(long iterations, size_t size) {
    for (long i = 0; i < iterations; i++) {
        void *p = bench_malloc(size);
        escape(p);
        bench_free(p, size);
    }
}

#define CG_WARMUP 1000

int callgrind_loop(long iterations, int keep_one_live, size_t size) {
    /* "warm": one more block of the class stays live throughout, so an
     * allocator that retires a page (or span) when its last block is freed
     * never sees it empty. */
    void *kept = keep_one_live ? must_malloc(size) : NULL;
    bench_cg_warmup(CG_WARMUP, size);
    bench_cg_loop(iterations, size);
    if (kept != NULL)
        bench_free(kept, size);
    return 0;
}
