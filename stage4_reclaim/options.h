/* stage4_reclaim/options.h — the tuning knobs, read from the environment.
 *
 * Read once, on first use, without calling malloc (getenv does not
 * allocate; the parsing below is ours). A malformed value is ignored with
 * one warning line on stderr, and the default is used.
 *
 *   HCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES  budget for all thread caches
 *                                          together (default 32 MiB)
 *   HCMALLOC_RELEASE_RATE                  how eagerly free pages go back
 *                                          to the OS, 0 = never (default 1)
 *   HCMALLOC_STATS                         1: print the stats report at exit
 *                                          (the drop-in library) */
#ifndef HC_OPTIONS_H_
#define HC_OPTIONS_H_

#include <stddef.h>

typedef struct hc_options {
    size_t max_total_thread_cache_bytes;
    size_t release_rate;
    int print_stats_at_exit;
} hc_options;

#define HC_DEFAULT_MAX_TOTAL_THREAD_CACHE_BYTES ((size_t)32 << 20)
#define HC_DEFAULT_RELEASE_RATE 1

/* The options, parsed on the first call. Thread-safe. */
const hc_options *hc_get_options(void);

/* Parses a whole decimal number, optionally followed by one of k, m, g
 * (KiB, MiB, GiB). Returns 0 on success, -1 if `text` is not that. */
int hc_parse_size(const char *text, size_t *out);

#endif /* HC_OPTIONS_H_ */
