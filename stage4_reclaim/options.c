/* stage4_reclaim/options.c — environment variables, parsed without malloc. */
#include "stage4_reclaim/options.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/fatal.h"
#include "common/fd_out.h"

static hc_options options;
static pthread_once_t options_once = PTHREAD_ONCE_INIT;

int hc_parse_size(const char *text, size_t *out) {
    /* LAB BEGIN: parse_size */
    size_t value = 0;
    const char *p = text;
    if (*p < '0' || *p > '9')
        return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (value > (SIZE_MAX - (size_t)(*p - '0')) / 10)
            return -1; /* overflow */
        value = value * 10 + (size_t)(*p - '0');
    }
    unsigned shift = 0;
    switch (*p) {
    case 'k': case 'K': shift = 10; p++; break;
    case 'm': case 'M': shift = 20; p++; break;
    case 'g': case 'G': shift = 30; p++; break;
    default: break;
    }
    if (*p != '\0' || (shift && value > (SIZE_MAX >> shift)))
        return -1;
    *out = value << shift;
    return 0;
    /* LAB END: parse_size */
}

/* Reads `name` into *value; keeps the default and warns if malformed. */
static void read_size(const char *name, size_t *value) {
    const char *text = getenv(name);
    if (text == NULL)
        return;
    size_t parsed;
    if (hc_parse_size(text, &parsed) == 0) {
        *value = parsed;
        return;
    }
    /* One line, built without stdio: "<name>: ignoring malformed value". */
    char line[160];
    hc_fd_out o;
    fd_out_to_string(&o, line, sizeof line);
    fd_out_put(&o, name);
    fd_out_put(&o, ": ignoring malformed value, using the default");
    fd_out_flush(&o);
    hc_warn(line);
}

static void options_init(void) {
    size_t stats = 0;
    options.max_total_thread_cache_bytes = HC_DEFAULT_MAX_TOTAL_THREAD_CACHE_BYTES;
    options.release_rate = HC_DEFAULT_RELEASE_RATE;
    options.release_delay_ms = HC_DEFAULT_RELEASE_DELAY_MS;
    read_size("HCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES", &options.max_total_thread_cache_bytes);
    read_size("HCMALLOC_RELEASE_RATE", &options.release_rate);
    read_size("HCMALLOC_RELEASE_DELAY_MS", &options.release_delay_ms);
    read_size("HCMALLOC_STATS", &stats);
    options.print_stats_at_exit = stats != 0;
    read_size("HCMALLOC_HEAP_LIMIT_MB", &options.heap_limit_mb);
    options.huge_heap_mb = HC_DEFAULT_HUGE_HEAP_MB;
    read_size("HCMALLOC_HUGE_HEAP_MB", &options.huge_heap_mb);
    const char *prefix = getenv("HCMALLOC_PROFILE");
    options.profile_prefix = prefix != NULL && prefix[0] != '\0' ? prefix : NULL;
    options.profile_sample_bytes = HC_DEFAULT_PROFILE_SAMPLE_BYTES;
    options.profile_interval_bytes = HC_DEFAULT_PROFILE_INTERVAL_BYTES;
    read_size("HCMALLOC_PROFILE_SAMPLE_BYTES", &options.profile_sample_bytes); /* 0: off, 1: all */
    read_size("HCMALLOC_PROFILE_INTERVAL_BYTES", &options.profile_interval_bytes);
    options.profile_interval_min_ms = HC_DEFAULT_PROFILE_INTERVAL_MIN_MS;
    read_size("HCMALLOC_PROFILE_INTERVAL_MIN_MS", &options.profile_interval_min_ms);
    size_t leak_check = 0;
    read_size("HCMALLOC_LEAK_CHECK", &leak_check);
    options.leak_check = leak_check > 2 ? 2 : (int)leak_check; /* 2: the reachable blocks too */
}

const hc_options *hc_get_options(void) {
    pthread_once(&options_once, options_init);
    return &options;
}
