/* bench/probes.c — the memory figures of a run (bench/probes.h).
 * May touch: /proc/self, the allocator's stats (bench/alloc_shim.h), libc. */
#define _GNU_SOURCE
#include "bench/probes.h"

#include <stdio.h>
#include <unistd.h>

#include "bench/alloc_shim.h"

/* Peak RSS is VmHWM. It is what getrusage's ru_maxrss would say, except that
 * Linux folds into ru_maxrss the RSS of the image a process had before exec:
 * the Python runner's 17 MiB, which would hide every small figure. */
long peak_rss_kib(void) {
    char line[256];
    long kib = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

/* A stage reports what it has mapped from the OS, and so does a preloaded
 * drop-in hcmalloc (stage 4's library exports hc_get_stats too); glibc and
 * the peers cannot be asked the same way, so their resident set stands in
 * (it leaves out mapped memory never touched, and counts the program's own
 * pages: docs/benchmarks.md says so). */
long end_mapped_kib(const char **source) {
    hc_stats stats;
    if (bench_allocator_stats(&stats)) {
        *source = "stats";
        return (long)(stats.os_mapped_bytes / 1024);
    }
    long pages_total = 0, pages_resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f != NULL) {
        if (fscanf(f, "%ld %ld", &pages_total, &pages_resident) != 2)
            pages_resident = 0;
        fclose(f);
    }
    *source = "rss";
    return pages_resident * (sysconf(_SC_PAGESIZE) / 1024);
}
