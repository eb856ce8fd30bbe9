/* bench/bench_driver.c — the bench's measuring process: one workload, one
 * allocator, one run, then exit. Each run is a fresh process, so no
 * allocator inherits another's heap.
 *
 * Built once per allocator (bench/defs.bzl) from the same files and one
 * allocator shim chosen at link time (bench/alloc_shim.h): shim_hcmalloc.c
 * calls a stage's hc_malloc / hc_free_sized; shim_malloc.c plain malloc /
 * free, which are glibc's, or a peer's when the runner (bench.py) sets
 * LD_PRELOAD. Its parts: the workloads and their list (workloads.c,
 * thread_workloads.c), the timing harness (harness.c), the memory probes
 * (probes.c), the heap-map sampler (heapmap.c) and the callgrind loop
 * (callgrind_loop.c).
 *
 * usage:
 *   bench_driver run WORKLOAD THREADS SCALE MAX_SECONDS
 *       prints: pairs=N wall_ns=N cut=0|1 peak_rss_kib=N end_mapped_kib=N
 *               mapped_source=stats|rss
 *       (or skipped=REASON when this allocator cannot run WORKLOAD)
 *   bench_driver callgrind ITERATIONS KEEP_ONE_LIVE [SIZE]
 *       the fast-path loop bench.py runs under callgrind (bench_cg_loop):
 *       pairs of malloc(SIZE) + free, SIZE 32 unless given
 *   bench_driver name
 *       prints the allocator this build calls: a stage's name, or the file
 *       of the library that malloc resolves to (so a preload is checked)
 *   bench_driver list
 *       prints the workloads, one a line: NAME<tab>ARTICLE<tab>WHAT
 * With BENCH_HEAPMAP=PREFIX, a run also writes heap maps (bench/heapmap.h).
 * May touch: the allocator under test through bench/alloc_shim.h, libc. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/alloc_shim.h"
#include "bench/callgrind_loop.h"
#include "bench/harness.h"
#include "bench/heapmap.h"
#include "bench/probes.h"
#include "bench/workloads.h"

static int run(const char *name, int threads, double scale, double max_seconds) {
    const workload *wl = find_workload(name);
    if (wl == NULL || threads < 1 || threads > BENCH_MAX_THREADS || !(scale > 0) || !(max_seconds > 0)) {
        fprintf(stderr, "bench_driver: bad run arguments\n");
        return 2;
    }
    if (wl->needs_realloc && !bench_has_realloc()) {
        printf("skipped=this_stage_has_no_realloc\n");
        return 0;
    }
    long per_thread = (long)(wl->total * scale) / threads;
    if (per_thread < 1)
        per_thread = 1;
    uint64_t max_ns = (uint64_t)(max_seconds * 1e9);
    uint64_t wall;
    heapmap_start();
    long pairs = wl->run(wl, threads, per_thread, max_ns, &wall);
    heapmap_finish();
    const char *source;
    long mapped = end_mapped_kib(&source);
    printf("pairs=%ld wall_ns=%llu cut=%d peak_rss_kib=%ld end_mapped_kib=%ld mapped_source=%s\n",
           pairs, (unsigned long long)wall, harness_was_cut(), peak_rss_kib(), mapped, source);
    return 0;
}

static int list_workloads(void) {
    for (size_t i = 0; i < workload_count; i++)
        printf("%s\t%s\t%s\n", workloads[i].name, workloads[i].article, workloads[i].what);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "name") == 0) {
        printf("%s\n", bench_allocator_name());
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "list") == 0)
        return list_workloads();
    if (argc == 6 && strcmp(argv[1], "run") == 0)
        return run(argv[2], atoi(argv[3]), strtod(argv[4], NULL), strtod(argv[5], NULL));
    if ((argc == 4 || argc == 5) && strcmp(argv[1], "callgrind") == 0)
        return callgrind_loop(atol(argv[2]), atoi(argv[3]), argc == 5 ? (size_t)atol(argv[4]) : 32);
    fprintf(stderr, "usage: bench_driver run WORKLOAD THREADS SCALE MAX_SECONDS"
                    " | callgrind ITERATIONS KEEP_ONE_LIVE [SIZE] | name | list\n"
                    "(started by `bazel run //bench`: see bench/bench.py)\n");
    return 2;
}
