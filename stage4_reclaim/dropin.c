/* stage4_reclaim/dropin.c — the drop-in library: the C malloc family on top
 * of the hc_* API, built into libhcmalloc.so (LD_PRELOAD or -lhcmalloc).
 *
 * Layer: above the public API; touches nothing but hc_*, the options and
 * the stats report.
 * Every function here is a thin translation from glibc's contract to
 * hcmalloc's (errno, alignment rules, what 0 means). Nothing here may call
 * malloc: these functions ARE malloc, so a libc call that allocates (stdio
 * does; getenv and write do not) would recurse into itself.
 * See docs/dropin.md. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "common/compiler.h"
#include "common/harden.h"
#include "common/hcmalloc.h"
#include "stage4_reclaim/options.h"
#include "stage4_reclaim/stats.h"

/* The system page: what valloc/pvalloc promise, whatever HC_PAGE_SIZE is. */
static size_t system_page_size(void) {
    static size_t page; /* racy but idempotent: every thread computes the same */
    if (page == 0)
        page = (size_t)sysconf(_SC_PAGESIZE);
    return page;
}

/* In libhcmalloc.so, malloc and free are hc_malloc and hc_free themselves:
 * its link gives each pair of names one address (--defsym, BUILD), so a call
 * costs no jump through a wrapper. A program that compiles this file in
 * gets the wrappers. */
#if !HC_DROPIN_ALIASES
HC_EXPORT void *malloc(size_t size) { return hc_malloc(size); }

HC_EXPORT void free(void *ptr) { hc_free(ptr); }
#endif

HC_EXPORT void *calloc(size_t count, size_t size) { return hc_calloc(count, size); }

/* realloc(NULL, n) = malloc(n); realloc(p, 0) frees p and returns NULL
 * (glibc's REALLOC_ZERO_BYTES_FREES): both are hc_realloc's contract. */
HC_EXPORT void *realloc(void *ptr, size_t size) { return hc_realloc(ptr, size); }

HC_EXPORT void *reallocarray(void *ptr, size_t count, size_t size) {
    size_t bytes;
    if (__builtin_mul_overflow(count, size, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    return hc_realloc(ptr, bytes);
}

/* glibc's memalign: an alignment of 8 or less is plain malloc, one that
 * is not a power of two is rounded up to the next power, and one too large
 * to round is EINVAL. (16 is not plain malloc: below 16 bytes malloc only
 * promises 8.) */
HC_EXPORT void *memalign(size_t alignment, size_t size) {
    if (alignment <= sizeof(void *))
        return hc_malloc(size);
    if (alignment > SIZE_MAX / 2 + 1) {
        errno = EINVAL;
        return NULL;
    }
    if ((alignment & (alignment - 1)) != 0)
        alignment = (size_t)1 << (64 - __builtin_clzl(alignment));
    return hc_aligned_alloc(alignment, size);
}

/* C11/C17: the alignment must be a power of two (glibc 2.38 rejects the
 * rest with EINVAL too); the size need not be a multiple of it. */
HC_EXPORT void *aligned_alloc(size_t alignment, size_t size) {
    return hc_aligned_alloc(alignment, size);
}

/* POSIX: reports through the return value and leaves *memptr alone on
 * failure. errno as glibc leaves it (tst-malloc-thread-fail checks it): an
 * invalid alignment does not touch it, a failure for memory leaves ENOMEM,
 * as the allocation underneath set it. */
HC_EXPORT int posix_memalign(void **memptr, size_t alignment, size_t size) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment % sizeof(void *) != 0)
        return EINVAL;
    void *p = hc_aligned_alloc(alignment, size);
    if (p == NULL)
        return errno;
    *memptr = p;
    return 0;
}

HC_EXPORT void *valloc(size_t size) { return hc_aligned_alloc(system_page_size(), size); }

/* valloc, with the size rounded up to whole pages (0 becomes one page). */
HC_EXPORT void *pvalloc(size_t size) {
    size_t page = system_page_size();
    size_t rounded;
    if (__builtin_add_overflow(size, page - 1, &rounded)) {
        errno = ENOMEM;
        return NULL;
    }
    rounded &= ~(page - 1);
    return hc_aligned_alloc(page, rounded == 0 ? page : rounded);
}

HC_EXPORT size_t malloc_usable_size(void *ptr) { return hc_usable_size(ptr); }

/* C23: `size` is what malloc/calloc/realloc was asked for, which is what
 * hc_free_sized wants (its fast path skips the page-map lookup). That
 * path trusts the size: the hardened library checks it against the block
 * first, as it does C++ sized delete's (common/harden.h), so that a wrong
 * size stops at the call instead of putting the block on another class's
 * list. */
#if HC_HARDENED
HC_EXPORT void free_sized(void *ptr, size_t size) {
    harden_sized_free(ptr, size, "free_sized(): wrong size for the block at");
}
#else
HC_EXPORT void free_sized(void *ptr, size_t size) { hc_free_sized(ptr, size); }
#endif

/* An aligned block may have come from a larger class than `size` names
 * (hc_aligned_alloc moves up to a class whose size is a multiple of the
 * alignment), so it is freed by address; the hardened library first checks
 * that size and alignment name the class it is in. */
HC_EXPORT void free_aligned_sized(void *ptr, size_t alignment, size_t size) {
#if HC_HARDENED
    harden_aligned_sized_free(ptr, alignment, size, "free_aligned_sized(): wrong size for the block at");
#else
    (void)alignment;
    (void)size;
    hc_free(ptr);
#endif
}

/* glibc's own entry points, which some programs and libraries call
 * directly (and glibc's malloc hooks used to): a block from __libc_malloc
 * freed with free, or the reverse, must meet one allocator. */
HC_EXPORT void *__libc_malloc(size_t size) { return hc_malloc(size); }
HC_EXPORT void __libc_free(void *ptr) { hc_free(ptr); }
HC_EXPORT void *__libc_calloc(size_t count, size_t size) { return hc_calloc(count, size); }
HC_EXPORT void *__libc_realloc(void *ptr, size_t size) { return hc_realloc(ptr, size); }
HC_EXPORT void *__libc_memalign(size_t alignment, size_t size) { return memalign(alignment, size); }

/* glibc: returns 1 if memory was released. We cannot tell cheaply; the
 * free pages are returned either way (the caller's thread cache too). */
HC_EXPORT int malloc_trim(size_t pad) {
    (void)pad;
    hc_release_free_memory();
    return 1;
}

/* glibc's mallinfo2 describes its arenas; ours says the same things of
 * hcmalloc's tiers (docs/dropin.md has the table):
 *   arena     bytes mapped from the OS for the heap (metadata excluded)
 *   uordblks  bytes in use by the program (rounded to size classes)
 *   fordblks  free bytes the allocator holds: thread caches, central
 *             cache, and free page-cache spans still resident
 *   keepcost  free bytes already given back to the OS (address kept)
 *   hblkhd    the allocator's own metadata (span records, page map, caches)
 * The counts of chunks (ordblks, smblks, hblks) and fsmblks/usmblks have no
 * counterpart and stay 0. */
HC_EXPORT struct mallinfo2 mallinfo2(void) {
    hc_stats s;
    hc_get_stats(&s);
    struct mallinfo2 info;
    memset(&info, 0, sizeof info);
    info.arena = s.os_mapped_bytes - s.metadata_bytes;
    info.uordblks = s.bytes_in_use;
    info.fordblks = s.thread_cache_bytes + s.central_cache_bytes + s.page_cache_free_bytes;
    info.keepcost = s.released_bytes;
    info.hblkhd = s.metadata_bytes;
    return info;
}

/* The old mallinfo: mallinfo2's figures in ints, each clamped at INT_MAX
 * (glibc truncates instead; a clamped figure at least stays an upper bound
 * of nothing and never goes negative). Programs that still call it get
 * hcmalloc's figures, not glibc's report of a heap nobody uses. */
static int clamp_to_int(size_t v) { return v > INT_MAX ? INT_MAX : (int)v; }

HC_EXPORT struct mallinfo mallinfo(void) {
    struct mallinfo2 wide = mallinfo2();
    struct mallinfo info;
    memset(&info, 0, sizeof info);
    info.arena = clamp_to_int(wide.arena);
    info.uordblks = clamp_to_int(wide.uordblks);
    info.fordblks = clamp_to_int(wide.fordblks);
    info.keepcost = clamp_to_int(wide.keepcost);
    info.hblkhd = clamp_to_int(wide.hblkhd);
    return info;
}

/* glibc prints its arena report on stderr; ours is hcmalloc's. write(2)
 * is a cancellation point: with a cancel pending, the first write would
 * end the thread and print nothing, so cancellation waits until the report
 * is out (glibc's malloc_stats does the same). */
HC_EXPORT void malloc_stats(void) {
    int old_state;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old_state);
    hc_print_stats(STDERR_FILENO);
    pthread_setcancelstate(old_state, NULL);
}

/* HCMALLOC_STATS=1: the report at exit. A destructor of the preloaded
 * library runs after the program's own destructors and atexit handlers,
 * so the report sees what the program left behind. */
__attribute__((destructor)) static void dropin_report_at_exit(void) {
    if (hc_get_options()->print_stats_at_exit)
        hc_print_stats(STDERR_FILENO);
}
