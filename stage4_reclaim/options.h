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
 *                                          (the drop-in library) */
#ifndef HC_OPTIONS_H_
#define HC_OPTIONS_H_


#include <stddef.h>

typedef struct hc_options {
    size_t max_total_thread_cache_bytes;
    size_t release_rate;
    size_t release_delay_ms;
    int print_stats_at_exit;
} hc_options;

#define HC_DEFAULT_MAX_TOTAL_THREAD_CACHE_BYTES ((size_t)32 << 20)
#define HC_DEFAULT_RELEASE_RATE 1
#define HC_DEFAULT_RELEASE_DELAY_MS 1000

/* The options, parsed on the first call. Thread-safe. */
const hc_options *hc_get_options(void);

/* Parses a whole decimal number, optionally followed by one of k, m, g
 * (KiB, MiB, GiB). Returns 0 on success, -1 if `text` is not that. */
int hc_parse_size(const char *text, size_t *out);

#endif /* HC_OPTIONS_H_ */
