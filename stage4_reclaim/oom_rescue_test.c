/* stage4_reclaim/oom_rescue_test.c — out of memory while the allocator
 * caches free memory (glibc's tst-dynarray-fail).
 *
 * Under an address-space limit (RLIMIT_AS, as `ulimit -v` or a container
 * sets it) the program fills the heap with 1000-byte blocks and frees them
 * all: some stay cached (this thread's list, the transfer cache, the spare
 * span). It then allocates 8-byte blocks until malloc fails. At that NULL,
 * hc_release_free_memory (malloc_trim(0)) must find nothing that would have
 * made the call succeed: the allocator already gave back what it cached
 * before it returned NULL (hc_layer_reclaim_for_retry), and counted the
 * calls that this rescued (hc_stats.oom_rescues). The 1000-byte class stays
 * in use meanwhile (a fetch from the central cache every KEEP_BUSY_EVERY
 * small blocks): a class nobody fetches from gives its cache back while the
 * heap grows (the idle sweep, stage3_pagecache/transfer_cache.h), and then
 * there would be nothing left for a rescue to find.
 * Plain C with its own main: one thread, nothing else allocating. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/hcmalloc.h"

#define MAX_BLOCKS (1 << 18)
#define HEADROOM ((size_t)96 << 20)
#define KEEP_BUSY_EVERY 4096 /* 8-byte blocks: 32 KiB, well inside a sweep period */

static void *blocks[MAX_BLOCKS]; /* static: no allocation of the test's own */

/* The process's mapped address space now, from /proc/self/statm (pages). */
static size_t address_space_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (f == NULL || fscanf(f, "%lu", &pages) != 1) {
        fprintf(stderr, "FAIL: cannot read /proc/self/statm\n");
        exit(1);
    }
    fclose(f);
    return pages * (size_t)sysconf(_SC_PAGESIZE);
}

int main(void) {
    /* The first allocations (thread cache, page map root leaf) before the
     * limit, so that the limit bounds the heap, not the set-up. */
    hc_free(hc_malloc(8));
    hc_free(hc_malloc(1000));
    struct rlimit limit = {address_space_bytes() + HEADROOM, RLIM_INFINITY};
    if (setrlimit(RLIMIT_AS, &limit) != 0) {
        perror("FAIL: setrlimit");
        return 1;
    }

    size_t big = 0;
    while (big < MAX_BLOCKS && (blocks[big] = hc_malloc(1000)) != NULL) big++;
    if (big == MAX_BLOCKS || big < 1000) {
        fprintf(stderr, "FAIL: %zu blocks of 1000 bytes under a limit of %zu MiB\n", big,
                (size_t)(HEADROOM >> 20));
        return 1;
    }
    for (size_t i = 0; i < big; i++) hc_free(blocks[i]);
    hc_stats before;
    hc_get_stats(&before);

    size_t small = 0;
    for (;;) {
        void *p = hc_malloc(8);
        if (p == NULL) break;
        small++;
        if (small % KEEP_BUSY_EVERY == 0) {
            /* The list goes back as a batch; the malloc fetches it again. */
            hc_thread_flush();
            hc_free(hc_malloc(1000));
        }
    }
    int failed_errno = errno;
    hc_stats after;
    hc_get_stats(&after);

    hc_release_free_memory(); /* what malloc_trim(0) does */
    void *retry = hc_malloc(8);
    int failures = 0;
    if (failed_errno != ENOMEM) {
        fprintf(stderr, "FAIL: malloc(8) failed with errno %d, not ENOMEM\n", failed_errno);
        failures++;
    }
    if (retry != NULL) {
        fprintf(stderr,
                "FAIL: malloc(8) returned NULL after %zu blocks, yet succeeded after "
                "hc_release_free_memory (%zu B had been cached in threads, %zu B centrally)\n",
                small, before.thread_cache_bytes, before.central_cache_bytes);
        failures++;
    }
    if (after.oom_rescues == 0) {
        fprintf(stderr, "FAIL: no rescue counted, though %zu B were cached when the heap filled\n",
                before.thread_cache_bytes + before.central_cache_bytes);
        failures++;
    }
    if (failures != 0)
        return 1;
    printf("oom_rescue_test: PASS (%zu + %zu blocks, %zu rescues)\n", big, small, after.oom_rescues);
    return 0;
}
