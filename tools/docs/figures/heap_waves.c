/* tools/docs/figures/heap_waves.c — the heap maps of docs/stage3.md and
 * docs/stage4.md: small and large blocks allocated in waves, half of
 * everything freed after each wave, then the rest. Not part of any
 * allocator layer: it calls the public API and hc_dump_heap_svg.
 *
 * usage: heap_waves PREFIX [PAUSE_MS]
 * Writes PREFIX-waves.svg (after the waves: spans half used, free spans
 * between them), PREFIX-freed.svg (everything freed and the thread's cache
 * flushed: stage 3 has merged the free spans back into one per region;
 * stage 4 has also released some of them) and PREFIX-released.svg (after
 * hc_release_free_memory: stage 4 has given every free page back).
 * PAUSE_MS (default 0) sleeps between waves, so that a traced build's time
 * buckets (HCMALLOC_TRACE) show the waves apart. */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/hcmalloc.h"
#include "stage3_pagecache/heap_map.h"

#define WAVES       4
#define WAVE_BYTES  ((size_t)6 << 20)
#define MAX_BLOCKS  200000

static void *blocks[MAX_BLOCKS];
static size_t live;

static uint64_t rng = 42;
static uint64_t next_random(void) { /* xorshift64* */
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545F4914F6CDD1Dull;
}

static int picture(const char *prefix, const char *moment) {
    char path[4096];
    snprintf(path, sizeof path, "%s-%s.svg", prefix, moment);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || hc_dump_heap_svg(fd) != 0) {
        perror(path);
        return 1;
    }
    close(fd);
    hc_stats s;
    hc_get_stats(&s);
    printf("%s: in use %zu KiB, page cache free %zu KiB, released %zu KiB, mapped %zu KiB\n", path,
           s.bytes_in_use >> 10, s.page_cache_free_bytes >> 10, s.released_bytes >> 10,
           s.os_mapped_bytes >> 10);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: heap_waves PREFIX [PAUSE_MS]\n");
        return 2;
    }
    long pause_ms = argc > 2 ? atol(argv[2]) : 0;
    for (int wave = 0; wave < WAVES; wave++) {
        /* Mostly small blocks of many classes, one in 50 a large one. */
        for (size_t bytes = 0; bytes < WAVE_BYTES && live < MAX_BLOCKS;) {
            uint64_t r = next_random();
            size_t size = r % 50 == 0 ? (256 << 10) + r % (768 << 10)
                        : r % 4 ? 16 + r % 1009 : 1024 + r % 15000;
            void *p = hc_malloc(size);
            if (p == NULL)
                return 1;
            memset(p, 1, size < 64 ? size : 64);
            blocks[live++] = p;
            bytes += size;
        }
        /* Free a random half of everything live. */
        for (size_t i = 0; i < live / 2; i++) {
            size_t victim = next_random() % live;
            hc_free(blocks[victim]);
            blocks[victim] = blocks[--live];
        }
        if (pause_ms > 0)
            nanosleep(&(struct timespec){.tv_sec = pause_ms / 1000, .tv_nsec = pause_ms % 1000 * 1000000}, NULL);
    }
    int failed = picture(argv[1], "waves");
    while (live > 0)
        hc_free(blocks[--live]);
    hc_thread_flush();
    failed |= picture(argv[1], "freed");
    hc_release_free_memory();
    failed |= picture(argv[1], "released");
    return failed;
}
