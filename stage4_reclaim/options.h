/* stage4_reclaim/options.h — the tuning knobs, read from the environment.
 *
 * Read once, on first use, without calling malloc (getenv does not
 * allocate; the parsing below is ours). A malformed value is ignored with
 * one warning line on stderr, and the default is used.
 *
 *   HCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES  budget for all thread caches
 *                                          together (default 32 MiB)
 *   HCMALLOC_RELEASE_DELAY_MS              free pages unused this long go
 *                                          back to the OS (default 1000)
 *   HCMALLOC_RELEASE_RATE                  divides the delay: 0 = never
 *                                          release, 1 = as set (default),
 *                                          1024 and up = at once
 *   HCMALLOC_STATS                         1: print the stats report at exit
 *                                          (the drop-in library)
 *   HCMALLOC_HEAP_LIMIT_MB                 the page cache maps at most this
 *                                          many MiB; past it, ENOMEM (0: none)
 *   HCMALLOC_HUGE_HEAP_MB                  once the heap is this many MiB, it
 *                                          grows in huge pages (default 4;
 *                                          0: never)
 * The heap profiler's (profile.h; they act in libhcmalloc_profiler.so, the
 * plain library warns that it ignores them):
 *   HCMALLOC_PROFILE                       PREFIX: write PREFIX.<pid>.<n>.heap
 *   HCMALLOC_PROFILE_SAMPLE_BYTES          mean bytes between samples (2m;
 *                                          1: every allocation; 0: none)
 *   HCMALLOC_PROFILE_INTERVAL_BYTES        a profile every this many bytes
 *                                          allocated (1g; 0: only at exit)
 *   HCMALLOC_PROFILE_INTERVAL_MIN_MS       but no two of those profiles
 *                                          closer than this (1000; 0: any)
 *   HCMALLOC_LEAK_CHECK                    1: report sampled blocks still
 *                                          live at exit */
#ifndef HC_OPTIONS_H_
#define HC_OPTIONS_H_


#include <stddef.h>

typedef struct hc_options {
    size_t max_total_thread_cache_bytes;
    size_t release_rate;
    size_t release_delay_ms;
    int print_stats_at_exit;
    size_t heap_limit_mb;           /* 0: no limit */
    size_t huge_heap_mb;            /* 0: no huge pages */
    const char *profile_prefix;     /* NULL: no profile files */
    size_t profile_sample_bytes;    /* mean distance between samples */
    size_t profile_interval_bytes;  /* 0: no periodic profiles */
    size_t profile_interval_min_ms; /* 0: a periodic profile at every interval */
    int leak_check;                 /* 0: none; 1: the leaks at exit; 2: and the reachable blocks */
} hc_options;

#define HC_DEFAULT_MAX_TOTAL_THREAD_CACHE_BYTES ((size_t)32 << 20)
#define HC_DEFAULT_RELEASE_RATE 1
#define HC_DEFAULT_RELEASE_DELAY_MS 1000
#define HC_DEFAULT_HUGE_HEAP_MB 4
#define HC_DEFAULT_PROFILE_SAMPLE_BYTES ((size_t)2 << 20)
#define HC_DEFAULT_PROFILE_INTERVAL_BYTES ((size_t)1 << 30)
#define HC_DEFAULT_PROFILE_INTERVAL_MIN_MS 1000

/* The options, parsed on the first call. Thread-safe. */
const hc_options *hc_get_options(void);

/* Parses a whole decimal number, optionally followed by one of k, m, g
 * (KiB, MiB, GiB). Returns 0 on success, -1 if `text` is not that. */
int hc_parse_size(const char *text, size_t *out);

#endif /* HC_OPTIONS_H_ */
