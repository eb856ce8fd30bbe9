/* stage1_threadcache/malloc.c — the public API of stages 1 and 2.
 *
 * Small requests go to the thread cache (thread_cache.h): a hit never leaves
 * the inline fast path below. Large requests (above HC_MAX_SMALL_SIZE) go
 * straight to the OS, one mapping each, which is why hc_free_sized must be
 * told the size: nothing here can find it from the pointer. That is the job
 * of stage 3's page map, and until then hc_free, hc_realloc,
 * hc_aligned_alloc and hc_usable_size fail the documented way.
 *
 * Stage 2 compiles this same file (by Bazel label); HC_STAGE_NAME and
 * HC_STAGE_FEATURES, set in each stage's BUILD, tell them apart. */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "common/compiler.h"
#include "common/fatal.h"
#include "common/hcmalloc.h"
#include "common/os.h"
#include "common/pool.h"
#include "common/track.h"
#include "stage1_threadcache/thread_cache.h"

/* ---- Large objects: one mapping each --------------------------------------- */

static atomic_size_t large_bytes; /* mapped for large objects, for stats */

/* Rounds up to whole OS pages; 0 when that overflows. */
static size_t large_mapping_size(size_t size) {
    size_t page = os_page_size();
    return size > SIZE_MAX - page ? 0 : (size + page - 1) & ~(page - 1);
}

static void *large_alloc(size_t size) {
    size_t bytes = large_mapping_size(size);
    if (bytes == 0) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = os_map(bytes);
    if (p != NULL) {
        atomic_fetch_add(&large_bytes, bytes);
        /* The page tail past `size` is off-limits, so an overflow shows. */
        track_internal_end(p, bytes);
        track_alloc(p, size, 1); /* fresh from mmap: zero */
    }
    return p;
}

static void large_free(void *ptr, size_t size) {
    size_t bytes = large_mapping_size(size);
    os_unmap(ptr, bytes);
    atomic_fetch_sub(&large_bytes, bytes);
}

/* ---- Slow paths -------------------------------------------------------------- */

static HC_NOINLINE void *malloc_slow(size_t size) {
    if (size == 0)
        size = 1; /* a unique, freeable pointer: the smallest class */
    if (size > HC_MAX_SMALL_SIZE)
        return large_alloc(size);
    unsigned cls = sc_index(size);
    tc_cache *tc = tc_get_or_create();
    if (tc == NULL)
        return NULL; /* errno = ENOMEM */
    harden_init(); /* before the first link is written (common/harden.h) */
    void *obj = tc_try_alloc(tc, cls); /* the cache may be new: try it first */
    if (obj == NULL)
        obj = tc_refill(tc, cls);
    if (obj != NULL && FL_POP_CLEARS_TAG)
        fl_clear_tag(obj); /* a refill's first object skips fl_pop: cleared as fl_pop would */
    track_alloc(obj, size, 0); /* NULL: nothing */
    return obj;
}

static HC_NOINLINE void free_slow(void *ptr, size_t size) {
    if (ptr == NULL)
        return;
    if (size == 0)
        size = 1;
    if (size > HC_MAX_SMALL_SIZE) {
        large_free(ptr, size);
        return;
    }
    tc_free_small_slow(ptr, sc_index(size));
}

/* ---- Fast paths ----------------------------------------------------------------
 * Requests of 1..4096 bytes (HC_TABLE_MAX_SIZE) that hit the thread cache
 * never leave these two functions. `size <= HC_TABLE_MAX_SIZE` is one
 * compare; size 0 finds lists[0], always empty and full, so it reaches the
 * slow path with no test of its own (thread_cache.h); tc_current is never
 * NULL (the sentinel), so there is no check for it either.
 * malloc: TLS load, compare, table load, pop. free: the same, a NULL check,
 * the limit check, push. Bigger small sizes take the slow path's first step,
 * which still serves them from the thread cache without a lock. */

HC_EXPORT void *hc_malloc(size_t size) {
    if (HC_LIKELY(size <= HC_TABLE_MAX_SIZE)) {
        /* tc_current read here, after the compare: then the compiler adds
         * the TLS slot straight to the offset (one instruction fewer). */
        void *obj = tc_list_try_alloc(tc_list_small(tc_current, size));
        if (HC_LIKELY(obj != NULL)) {
            track_alloc(obj, size, 0);
            return obj;
        }
    }
    return malloc_slow(size);
}

HC_EXPORT void hc_free_sized(void *ptr, size_t size) {
    track_free(ptr, size); /* from here on only the free list may touch it */
    if (HC_LIKELY(size <= HC_TABLE_MAX_SIZE && ptr != NULL)) {
        if (HC_LIKELY(tc_list_try_free(tc_list_small(tc_current, size), ptr)))
            return;
    }
    free_slow(ptr, size);
}

/* ---- The rest of the API ----------------------------------------------------------- */

HC_EXPORT void *hc_calloc(size_t count, size_t size) {
    size_t bytes;
    if (__builtin_mul_overflow(count, size, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = hc_malloc(bytes);
    /* Large blocks come fresh from mmap, already zero; cached ones may not be. */
    if (p != NULL && bytes <= HC_MAX_SMALL_SIZE)
        memset(p, 0, bytes);
    return p;
}

HC_EXPORT void hc_free(void *ptr) {
    if (ptr == NULL)
        return;
    hc_fatal("hc_free() needs the page map of stage3_pagecache; "
             HC_STRINGIFY(HC_STAGE_NAME) " has only hc_free_sized()");
}

HC_EXPORT size_t hc_usable_size(const void *ptr) {
    if (ptr == NULL)
        return 0;
    hc_fatal("hc_usable_size() needs the page map of stage3_pagecache; "
             HC_STRINGIFY(HC_STAGE_NAME) " cannot size a pointer");
}

/* Without a size for ptr there is no way to copy it: report failure, leave
 * the block untouched (as C's realloc does on failure). */
HC_EXPORT void *hc_realloc(void *ptr, size_t size) {
    (void)ptr;
    (void)size;
    errno = ENOMEM;
    return NULL;
}

HC_EXPORT void *hc_aligned_alloc(size_t alignment, size_t size) {
    (void)size;
    errno = (alignment == 0 || (alignment & (alignment - 1)) != 0) ? EINVAL : ENOMEM;
    return NULL;
}

HC_EXPORT void hc_thread_flush(void) { tc_flush_current(); }

HC_EXPORT void hc_release_free_memory(void) {
    /* Stage 4 adds returning memory to the OS; nothing to do before it. */
}

HC_EXPORT void hc_get_stats(hc_stats *out) {
    memset(out, 0, sizeof *out);
    tc_collect_stats(out);
    size_t large = atomic_load(&large_bytes);
    out->bytes_in_use += large;
    out->os_mapped_bytes = os_mapped_bytes();
    out->metadata_bytes = pool_mapped_bytes();
}

HC_EXPORT const char *hc_stage_name(void) { return HC_STRINGIFY(HC_STAGE_NAME); }

HC_EXPORT unsigned hc_features(void) { return HC_STAGE_FEATURES; }
