/* bench/latency.c — malloc's tail latency and the heap's footprint over
 * time, for one workload, under whatever malloc the process has (run it
 * plain for glibc, with LD_PRELOAD for hcmalloc's drop-in or a peer).
 *
 * Not part of any allocator layer, and not one of bench.py's workloads (it
 * times each call, they time runs). The workload, in four phases of
 * mixed's sizes (16 B..4 KiB at random, xorshift, the same sequence for
 * every allocator): grow to LIVE bytes; free 9 blocks in 10 at random
 * (holes everywhere); grow again to LIVE bytes with sizes four times as
 * large (the holes fit few of them); free everything; ROUNDS times. Every
 * block is written whole (the bytes are live). Every malloc is
 * timed with the TSC (rdtsc, calibrated against CLOCK_MONOTONIC; the
 * timer's own cost, measured with no call between the reads, is
 * subtracted) and the percentiles printed per allocator; after each phase
 * it prints the resident set (less the program's own before the first
 * malloc) over the bytes the program holds, and what hcmalloc has mapped
 * when it is the malloc (hc_get_stats), for the first and the last round. The program's own arrays are mapped directly, outside the
 * heap measured.
 *
 * usage: bazel build -c opt //bench:latency
 *        bazel-bin/bench/latency [LIVE_MIB [ROUNDS]]        (glibc; 64 MiB, 4)
 *        LD_PRELOAD=bazel-bin/stage4_reclaim/libhcmalloc.so bazel-bin/bench/latency
 *        (docs/interview.md, "Tail latency", has a run) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "common/hcmalloc.h" /* hc_stats, for the footprint when hcmalloc answers */

static uint64_t rng = 88172645463325252ull;
static uint64_t next_random(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int compare_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static void *map_zeroed(size_t bytes) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static double baseline_rss;

/* The resident set, less the program's own before its first malloc. */
static double resident_bytes(void) {
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return (double)resident * (double)sysconf(_SC_PAGESIZE) - baseline_rss;
}

int main(int argc, char **argv) {
    size_t live_target = (size_t)((argc > 1 ? atof(argv[1]) : 64) * 1048576);
    int rounds = argc > 2 ? atoi(argv[2]) : 4;
    if (live_target < 4096 || rounds < 1)
        return 2;
    size_t max_blocks = live_target / 16 + 1;
    void **blocks = map_zeroed(max_blocks * sizeof *blocks);
    uint32_t *sizes = map_zeroed(max_blocks * sizeof *sizes);
    uint32_t *ticks = map_zeroed(2 * (size_t)rounds * max_blocks * sizeof *ticks); /* one a malloc */
    if (!blocks || !sizes || !ticks)
        return 1;
    baseline_rss = resident_bytes();
    /* hcmalloc says what it has mapped (released pages included). */
    void (*get_stats)(hc_stats *) = (void (*)(hc_stats *))dlsym(RTLD_DEFAULT, "hc_get_stats");
    /* The TSC's rate, and what two reads with nothing between cost. */
    double t0 = now_ns();
    uint64_t c0 = __rdtsc();
    while (now_ns() - t0 < 50e6) {
    }
    double ns_per_tick = (now_ns() - t0) / (double)(__rdtsc() - c0);
    uint64_t overhead = UINT64_MAX;
    for (int i = 0; i < 1000; i++) {
        _mm_lfence();
        uint64_t a = __rdtsc();
        _mm_lfence();
        uint64_t b = __rdtsc();
        if (b - a < overhead)
            overhead = b - a;
    }
    size_t count = 0, timed = 0, live = 0;
    for (int step = 0; step < 4 * rounds; step++) {
        int phase = step % 4, round = step / 4;
        if (phase == 0 || phase == 2) { /* grow to the target */
            size_t scale = phase == 0 ? 1 : 4;
            while (live < live_target && count < max_blocks) {
                size_t size = (16 + next_random() % 4081) * scale;
                _mm_lfence();
                uint64_t a = __rdtsc();
                _mm_lfence();
                void *p = malloc(size);
                _mm_lfence();
                uint64_t b = __rdtsc();
                if (p == NULL)
                    return 1;
                memset(p, 1, size);
                ticks[timed++] = (uint32_t)(b - a > overhead ? b - a - overhead : 0);
                blocks[count] = p;
                sizes[count++] = (uint32_t)size;
                live += size;
            }
        } else { /* free 9 in 10 at random (phase 1), or all (phase 3) */
            size_t kept = 0;
            for (size_t i = 0; i < count; i++) {
                if (phase == 1 && next_random() % 10 == 0) {
                    blocks[kept] = blocks[i];
                    sizes[kept++] = sizes[i];
                    continue;
                }
                free(blocks[i]);
                live -= sizes[i];
            }
            count = kept;
        }
        if (round != 0 && round != rounds - 1)
            continue;
        double rss = resident_bytes();
        static const char *what[] = {"grown", "9 in 10 freed", "regrown, 4x sizes", "all freed"};
        printf("round %d, phase %d (%-17s): live %5.1f MiB, RSS %6.1f MiB, RSS / live %5.2f", round + 1,
               phase + 1, what[phase], live / 1048576.0, rss / 1048576.0, live ? rss / (double)live : 0.0);
        if (get_stats) {
            hc_stats stats;
            get_stats(&stats);
            printf(", mapped %.1f MiB", stats.os_mapped_bytes / 1048576.0);
        }
        printf("\n");
    }
    qsort(ticks, timed, sizeof *ticks, compare_u32);
    double q[] = {0.5, 0.99, 0.999, 0.9999};
    printf("malloc latency over %zu calls, ns:", timed);
    for (int i = 0; i < 4; i++)
        printf(" p%g %.0f,", q[i] * 100, ticks[(size_t)(q[i] * (double)(timed - 1))] * ns_per_tick);
    printf(" max %.0f\n", ticks[timed - 1] * ns_per_tick);
    return 0;
}
