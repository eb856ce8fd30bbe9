/* tools/measure/grow_buffer.c — one buffer grown by realloc in equal steps,
 * as a program reading a stream of unknown length into memory grows it;
 * run under a preloaded allocator (docs/benchmarks.md, section 28):
 *
 *     LD_PRELOAD=LIB grow_buffer STEP_BYTES TOP_MIB
 *
 * Each step writes a byte on every 512 bytes of the new part; at the end
 * every one of them is checked, so a move that lost or shifted a page is
 * reported, not timed. Prints the reallocs that moved the buffer, the time
 * and the peak RSS (getrusage). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static unsigned char mark(size_t i) { return (unsigned char)(i >> 9); }

int main(int argc, char **argv) {
    long step = argc == 3 ? atol(argv[1]) : 0, top_mib = argc == 3 ? atol(argv[2]) : 0;
    if (step <= 0 || top_mib <= 0) {
        fprintf(stderr, "usage: grow_buffer STEP_BYTES TOP_MIB\n");
        return 2;
    }
    size_t top = (size_t)top_mib << 20, n = 0, moves = 0;
    unsigned char *buffer = NULL;
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    while (n < top) {
        unsigned char *grown = realloc(buffer, n + (size_t)step);
        if (grown == NULL) {
            fprintf(stderr, "grow_buffer: realloc to %zu bytes failed\n", n + (size_t)step);
            return 1;
        }
        moves += grown != buffer;
        for (size_t i = (n + 511) & ~(size_t)511; i < n + (size_t)step; i += 512)
            grown[i] = mark(i);
        buffer = grown;
        n += (size_t)step;
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    for (size_t i = 0; i < n; i += 512)
        if (buffer[i] != mark(i)) {
            fprintf(stderr, "grow_buffer: byte %zu changed\n", i);
            return 1;
        }
    free(buffer);
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    printf("grew to %ld MiB by %ld-byte steps: %zu moves, %.0f ms, peak RSS %ld KiB\n", top_mib, step, moves,
           (double)(end.tv_sec - start.tv_sec) * 1e3 + (double)(end.tv_nsec - start.tv_nsec) / 1e6,
           usage.ru_maxrss);
    return 0;
}
