/* tools/docs/experiments/thp_span_release.c — what giving one 8 KiB span back to
 * the OS does to the 2 MiB huge page around it.
 *
 * Not part of any allocator layer: a stand-alone program for
 * docs/interview.md ("Huge pages"). It maps 4 MiB, keeps the 2 MiB-aligned
 * half, asks for huge pages (MADV_HUGEPAGE: this machine's THP mode is
 * "madvise"), touches it, then releases one 8 KiB span in the middle with
 * MADV_DONTNEED, as stage 4's page_release.c does with a free span, and
 * prints the region's AnonHugePages and Rss (from /proc/self/smaps) after
 * each step.
 *
 * usage: gcc -O2 tools/docs/experiments/thp_span_release.c -o /tmp/thp && /tmp/thp */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE (2u << 20)
#define SPAN (8u << 10)

/* Rss and AnonHugePages, in KiB, of the mapping that starts at `start`. */
static void report(const char *step, const char *start) {
    char line[256], want[32];
    snprintf(want, sizeof want, "%lx-", (unsigned long)(uintptr_t)start);
    FILE *f = fopen("/proc/self/smaps", "r");
    int in = 0;
    long rss = -1, huge = -1;
    while (f && fgets(line, sizeof line, f)) {
        if (strchr(line, '-') && strchr(line, ' ') > strchr(line, '-') && line[0] != ' ' &&
            ((line[0] >= '0' && line[0] <= '9') || (line[0] >= 'a' && line[0] <= 'f')))
            in = strncmp(line, want, strlen(want)) == 0;
        else if (in && sscanf(line, "Rss: %ld kB", &rss) == 1)
            continue;
        else if (in && sscanf(line, "AnonHugePages: %ld kB", &huge) == 1)
            in = 0;
    }
    if (f)
        fclose(f);
    printf("%-44s Rss %5ld KiB, AnonHugePages %5ld KiB\n", step, rss, huge);
}

int main(void) {
    char *raw = mmap(NULL, 2 * HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return 1;
    char *region = (char *)(((uintptr_t)raw + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
    /* Only the aligned 2 MiB stays mapped: smaps then shows it alone. */
    if (region > raw)
        munmap(raw, (size_t)(region - raw));
    munmap(region + HUGE, (size_t)(raw + 2 * HUGE - (region + HUGE)));
    if (madvise(region, HUGE, MADV_HUGEPAGE) != 0)
        perror("madvise(MADV_HUGEPAGE)");
    memset(region, 1, HUGE); /* the first touch faults in one huge page, if THP allows */
    report("touched, MADV_HUGEPAGE:", region);
    madvise(region + HUGE / 2, SPAN, MADV_DONTNEED); /* one free span released */
    report("one 8 KiB span released (MADV_DONTNEED):", region);
    region[HUGE / 2] = 1; /* the span is reused: its pages fault back in */
    report("the span touched again:", region);
    return 0;
}
