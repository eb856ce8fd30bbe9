/* tools/docs/experiments/thp_first_touch.c — what the first touch of new
 * memory costs, in 4 KiB pages and in 2 MiB huge pages.
 *
 * Not part of any allocator layer: a stand-alone program for
 * docs/benchmarks.md, section 37 (huge pages past HCMALLOC_HUGE_HEAP_MB).
 * It maps 64 MiB on a 2 MiB boundary and times one of three ways of making
 * it resident: a byte written per 4 KiB page ("touch"), the same after
 * MADV_HUGEPAGE ("huge", this machine's THP mode being "madvise"), or one
 * MADV_POPULATE_WRITE call with no write ("populate"); then it prints the
 * time per 4 KiB page and the mapping's AnonHugePages.
 *
 * usage: gcc -O2 tools/docs/experiments/thp_first_touch.c -o /tmp/first_touch &&
 *        for m in touch huge populate; do /tmp/first_touch $m; done */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define HUGE  ((size_t)2 << 20)
#define BYTES ((size_t)64 << 20)
#define PAGE  ((size_t)4 << 10)

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* The AnonHugePages of the whole process (this program maps nothing else big). */
static size_t anon_huge_kib(void) {
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    char line[256];
    size_t kib = 0;
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "AnonHugePages: %zu", &kib) == 1)
            break;
    if (f != NULL)
        fclose(f);
    return kib;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "touch";
    char *raw = mmap(NULL, BYTES + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    char *p = (char *)(((uintptr_t)raw + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
    if (strcmp(mode, "huge") == 0)
        madvise(p, BYTES, MADV_HUGEPAGE);
    double start = now_ms();
    if (strcmp(mode, "populate") == 0)
        madvise(p, BYTES, MADV_POPULATE_WRITE);
    else
        for (size_t at = 0; at < BYTES; at += PAGE)
            p[at] = 1;
    double ms = now_ms() - start;
    printf("%-8s 64 MiB in %6.1f ms: %5.2f us a 4 KiB page, AnonHugePages %zu KiB\n", mode, ms,
           ms * 1e3 / (double)(BYTES / PAGE), anon_huge_kib());
    return 0;
}
