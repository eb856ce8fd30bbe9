/* stage4_reclaim/address_limit_test.c — under an address-space limit
 * (RLIMIT_AS, `ulimit -v`), memory freed as blocks of one size comes back
 * as blocks of another.
 *
 * A released free span keeps its address range, and RLIMIT_AS counts it:
 * unless the out-of-memory rescue unmaps the free spans
 * (stage4_reclaim/layer_hooks.c, pc_unmap_free_spans), a heap filled with
 * large blocks and freed has no room left for the metadata, regions and
 * direct maps that blocks of another size need. Each case runs in a child
 * process of its own, under a limit of what it has mapped plus HEADROOM:
 *   - fill with 70000-byte blocks, free all, hc_release_free_memory, fill
 *     with 64-byte blocks: at least half the bytes must come back;
 *   - fill with 1 MiB blocks, free all, hc_release_free_memory: one block
 *     of PC_DIRECT_MAP_BYTES (mapped directly) must then succeed.
 * Plain C with its own main: one thread per process, nothing else allocating. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/hcmalloc.h"
#include "stage3_pagecache/page_cache.h"
#include "stage4_reclaim/address_space_limit.h"

#define HEADROOM ((size_t)160 << 20)
#define MAX_BLOCKS 4096 /* of the first size: HEADROOM / 70000 is about 2400 */

static void *blocks[MAX_BLOCKS]; /* static: no allocation of the test's own */

/* Fills the limit with blocks of `size` bytes (each touched), frees them
 * all, and returns the bytes that fitted. */
static size_t fill_and_free(size_t size) {
    size_t n = 0;
    while (n < MAX_BLOCKS && (blocks[n] = hc_malloc(size)) != NULL) {
        *(char *)blocks[n] = 1;
        n++;
    }
    if (n == MAX_BLOCKS || n < 16) {
        fprintf(stderr, "FAIL: %zu blocks of %zu bytes under a limit of %zu MiB more\n", n, size,
                HEADROOM >> 20);
        exit(1);
    }
    for (size_t i = 0; i < n; i++) hc_free(blocks[i]);
    hc_release_free_memory(); /* what malloc_trim(0) does: the address ranges stay */
    return n * size;
}

static int small_after_medium(void) {
    hc_free(hc_malloc(64)); /* the thread cache and first leaves, before the limit */
    limit_address_space(HEADROOM);
    size_t medium = fill_and_free(70000);
    size_t small = 0;
    while (hc_malloc(64) != NULL) small += 64; /* kept: the limit is the end */
    const char *broken = pc_check();
    if (broken != NULL) {
        fprintf(stderr, "FAIL: page cache after the fill: %s\n", broken);
        return 1;
    }
    printf("  %zu MiB as 70000-byte blocks, then %zu MiB as 64-byte blocks (%zu%%)\n",
           medium >> 20, small >> 20, 100 * small / medium);
    if (small < medium / 2) {
        fprintf(stderr, "FAIL: freed 70000-byte blocks came back as 64-byte blocks for %zu%% only\n",
                100 * small / medium);
        return 1;
    }
    return 0;
}

static int direct_after_large(void) {
    hc_free(hc_malloc(1 << 20));
    limit_address_space(HEADROOM);
    size_t large = fill_and_free(1 << 20);
    char *huge = hc_malloc(PC_DIRECT_MAP_BYTES);
    printf("  %zu MiB as 1 MiB blocks, then a %zu MiB block: %s\n", large >> 20,
           (size_t)PC_DIRECT_MAP_BYTES >> 20, huge != NULL ? "yes" : "no");
    if (huge == NULL) {
        fprintf(stderr, "FAIL: no %zu MiB block after %zu MiB of 1 MiB blocks were freed\n",
                (size_t)PC_DIRECT_MAP_BYTES >> 20, large >> 20);
        return 1;
    }
    huge[PC_DIRECT_MAP_BYTES - 1] = 1;
    hc_free(huge);
    return 0;
}

/* Runs `run` in a child (its limit stays there); 1 if it failed. */
static int in_child(const char *name, int (*run)(void)) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("FAIL: fork");
        return 1;
    }
    if (pid == 0) {
        int failed = run();
        fflush(stdout); /* _exit does not */
        _exit(failed);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "FAIL: %s (status 0x%x)\n", name, status);
        return 1;
    }
    printf("%s: ok\n", name);
    return 0;
}

int main(void) {
    int failures = in_child("small blocks after medium ones", small_after_medium) +
                   in_child("a direct map after large blocks", direct_after_large);
    if (failures != 0)
        return 1;
    printf("address_limit_test: PASS\n");
    return 0;
}
