/* hcmalloc public API: the contract every stage implements.
 *
 * Each stage (stage1_threadcache .. stage4_reclaim) is a complete allocator
 * behind exactly these names. A stage that does not have a function yet still
 * defines it: it fails the documented way, and hc_features() says so, so a
 * caller (and the shared test suite) can tell "missing" from "broken". */
#ifndef HCMALLOC_H_
#define HCMALLOC_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What this stage implements (hc_features()). */
#define HC_FEATURE_CENTRAL_CACHE        (1u << 0) /* stage 2+: objects move between threads */
#define HC_FEATURE_UNSIZED_FREE         (1u << 1) /* stage 3+: hc_free, hc_usable_size, hc_realloc, hc_aligned_alloc */
#define HC_FEATURE_PAGE_CACHE           (1u << 2) /* stage 3+: spans split and merge */
#define HC_FEATURE_THREAD_EXIT_RECLAIM  (1u << 3) /* stage 4: an exiting thread's cache is returned */
#define HC_FEATURE_RELEASE_TO_OS        (1u << 4) /* stage 4: free pages go back to the kernel */

/* Where the allocator's bytes are (hc_get_stats). A stage fills the fields it
 * can know; the others are 0 and the comment says which stage fills them. */
typedef struct hc_stats {
    size_t bytes_in_use;          /* handed out and not yet freed (rounded to size class) */
    size_t thread_cache_bytes;    /* free objects cached by threads */
    size_t central_cache_bytes;   /* free objects held by central buckets (stage 2+) */
    size_t page_cache_free_bytes; /* free spans in the page cache, still backed (stage 3+) */
    size_t released_bytes;        /* free spans given back to the OS, address kept (stage 4) */
    size_t os_mapped_bytes;       /* everything mapped from the OS now, metadata included */
    size_t metadata_bytes;        /* of which: the allocator's own records (pool, page map) */
    size_t oom_rescues;           /* calls that failed for memory, then succeeded once the
                                     allocator gave back what it cached (stage 3+) */
    size_t thread_cache_budget_bytes; /* stage 4: all thread caches together stay under it */
    size_t heap_limit_bytes;      /* stage 4: HCMALLOC_HEAP_LIMIT_MB in bytes; 0 = no limit */
    size_t heap_limit_hits;       /* stage 4: times the heap limit refused to map; a request
                                     refused is retried once, after the caches go back */
} hc_stats;

/* Returns a block of at least `size` bytes, 16-byte aligned when size >= 16
 * (8 below). hc_malloc(0) returns a unique pointer that may be freed.
 * On failure returns NULL with errno = ENOMEM; it never aborts. */
void *hc_malloc(size_t size);

/* Frees `ptr`, which hc_malloc returned for exactly `size` bytes.
 * hc_free_sized(NULL, n) does nothing. Works on every stage. */
void hc_free_sized(void *ptr, size_t size);

/* count * size zeroed bytes; NULL with errno = ENOMEM when the product overflows. */
void *hc_calloc(size_t count, size_t size);

/* Stage 3+: frees `ptr` without its size (looked up in the page map).
 * hc_free(NULL) does nothing. A pointer the allocator does not own, or one
 * inside a block, prints "hcmalloc: free(): invalid pointer 0x..." and aborts.
 * Stages 1-2 abort with a message naming the stage that adds it. */
void hc_free(void *ptr);

/* Stage 3+: C realloc. realloc(NULL, n) = malloc(n); realloc(p, 0) frees p
 * and returns NULL, as glibc's does; on failure NULL with ENOMEM and the old
 * block untouched. Stages 1-2: NULL, ENOMEM. */
void *hc_realloc(void *ptr, size_t size);

/* Stage 3+: `size` bytes aligned to `alignment`, a power of two (else NULL,
 * EINVAL). Free it with hc_free. Stages 1-2: NULL, ENOMEM. */
void *hc_aligned_alloc(size_t alignment, size_t size);

/* Stage 3+: bytes usable at `ptr` (>= the size asked for); 0 for NULL.
 * Stages 1-2 abort with a message naming the stage that adds it. */
size_t hc_usable_size(const void *ptr);

/* Gives the calling thread's cached free objects back to the shared tiers
 * (stage 2+). Stage 1 has no shared tier: the objects stay with the thread. */
void hc_thread_flush(void);

/* Stage 3: gives what the central cache keeps for reuse (transfer caches,
 * spare empty spans) back to the page cache. Stage 4: that, and returns
 * every free page to the OS now. Earlier stages: no effect. */
void hc_release_free_memory(void);

/* Fills *out with a snapshot of where the allocator's bytes are. */
void hc_get_stats(hc_stats *out);

/* One figure of hc_get_stats by name, for monitoring (the names of
 * tcmalloc's MallocExtension properties where one exists; the list is in
 * docs/dropin.md, "Profiling and tuning"): sets *value and returns 1 if this
 * stage has the figure, returns 0 and leaves *value alone if it does not
 * (an unknown name, or one a later stage adds). */
int hc_get_property(const char *name, size_t *value);

/* Stage 4's profiler library (libhcmalloc_profiler.so): writes the sampled
 * live heap, in the text format google-pprof reads, to `fd`; 0, or -1 with
 * errno (ENOSYS where there is no profiler: every other build). */
int hc_dump_heap_profile(int fd);

/* "stage1_threadcache", "stage2_centralcache", ... */
const char *hc_stage_name(void);

/* HC_FEATURE_* bits of this stage. */
unsigned hc_features(void);

#ifdef __cplusplus
}
#endif

#endif /* HCMALLOC_H_ */
