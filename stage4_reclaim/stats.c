/* stage4_reclaim/stats.c — layer 4: hc_print_stats, the text report.
 *
 * One snapshot per layer (hc_get_stats, the budget, the page cache census),
 * each taken under that layer's lock; the report is not one atomic moment
 * across layers, and says so. Nothing here runs on the fast path.
 * May touch: the public stats, tc_budget_snapshot, pc_get_census, the
 * profiler's counters, write(2). */
#define _GNU_SOURCE
#include "stage4_reclaim/stats.h"

#include <unistd.h>

#include "common/hcmalloc.h"
#include "stage3_pagecache/page_cache.h"
#include "stage4_reclaim/page_release.h"
#include "stage4_reclaim/profile.h"
#include "stage4_reclaim/reclaim.h"

typedef struct text {
    char *buf;
    size_t size, len; /* len < size always: room for the NUL */
} text;

static void put(text *t, const char *s) {
    for (; *s && t->len + 1 < t->size; s++)
        t->buf[t->len++] = *s;
    t->buf[t->len] = '\0';
}

/* `value` in decimal, right-aligned in `width` characters. */
static void put_number(text *t, size_t value, int width) {
    char digits[24];
    int n = 0;
    do {
        digits[n++] = (char)('0' + value % 10);
        value /= 10;
    } while (value != 0);
    char out[48];
    int len = 0;
    for (int pad = width - n; pad > 0 && len < 24; pad--) out[len++] = ' ';
    while (n > 0) out[len++] = digits[--n];
    out[len] = '\0';
    put(t, out);
}

/* "<label>: <bytes> (<MiB>.<tenth> MiB)" and a newline. */
static void put_bytes_line(text *t, const char *label, size_t bytes) {
    put(t, label);
    put_number(t, bytes, 14);
    put(t, " (");
    size_t tenths = (bytes * 10 + (1 << 19)) >> 20; /* MiB, rounded to 0.1 */
    put_number(t, tenths / 10, 7);
    put(t, ".");
    put_number(t, tenths % 10, 1);
    put(t, " MiB)\n");
}

size_t hc_format_stats(char *buf, size_t size) {
    text t = {buf, size, 0};
    if (size == 0)
        return 0;
    buf[0] = '\0';
    hc_stats s;
    hc_get_stats(&s);
    tc_budget_stats b;
    tc_budget_snapshot(&b);
    pc_census c;
    pc_get_census(&c);

    put(&t, "------------------------------------------------------------\n");
    put(&t, "hcmalloc (");
    put(&t, hc_stage_name());
    put(&t, ")\n");
    put_bytes_line(&t, "bytes in use by the program        ", s.bytes_in_use);
    put_bytes_line(&t, "free in thread caches              ", s.thread_cache_bytes);
    put_bytes_line(&t, "free in central buckets            ", s.central_cache_bytes);
    put_bytes_line(&t, "free in the page cache (backed)    ", s.page_cache_free_bytes);
    put_bytes_line(&t, "released to the OS (address kept)  ", s.released_bytes);
    put_bytes_line(&t, "mapped from the OS                 ", s.os_mapped_bytes);
    put_bytes_line(&t, "  of which metadata                ", s.metadata_bytes);
    put(&t, "------------------------------------------------------------\n");
    put_bytes_line(&t, "thread-cache budget                ", b.budget_bytes);
    put_bytes_line(&t, "  given to live threads as share   ", b.share_bytes);
    put_bytes_line(&t, "  reserved by their lists' limits  ", b.capacity_bytes);
    put(&t, "live thread caches                 ");
    put_number(&t, b.live_caches, 14);
    put(&t, "\npage-cache regions / free spans    ");
    put_number(&t, c.regions, 14);
    put(&t, " /");
    put_number(&t, c.free_spans, 8);
    put(&t, "\nlargest free span (pages)          ");
    put_number(&t, c.largest_free_pages, 14);
    put(&t, "\ndirectly mapped blocks             ");
    put_number(&t, c.direct_spans, 14);
    put(&t, "\nmadvise calls (releases)           ");
    put_number(&t, pc_release_calls(), 14);
    put(&t, "\nout-of-memory rescues (retries won)  ");
    put_number(&t, s.oom_rescues, 12);
    put(&t, "\nheap limit (HCMALLOC_HEAP_LIMIT_MB)");
    if (s.heap_limit_bytes == 0) {
        put(&t, "          none");
    } else {
        put_number(&t, s.heap_limit_bytes >> 20, 10);
        put(&t, " MiB");
    }
    put(&t, "\n  refusals to map at the limit     ");
    put_number(&t, s.heap_limit_hits, 14);
    hc_profile_stats p;
    hc_profile_get_stats(&p);
    if (p.sample_bytes != 0 && p.samples != 0) {
        put(&t, "\nheap profile: sampled / still live ");
        put_number(&t, p.samples, 14);
        put(&t, " /");
        put_number(&t, p.live_samples, 8);
        put_bytes_line(&t, "\n  live bytes they stand for        ", p.live_estimate);
    } else {
        put(&t, "\n");
    }
    put(&t, "(each layer counted under its own lock: the figures are not one instant)\n");
    put(&t, "------------------------------------------------------------\n");
    return t.len;
}

void hc_print_stats(int fd) {
    char buf[3072];
    size_t len = hc_format_stats(buf, sizeof buf);
    for (size_t done = 0; done < len;) {
        ssize_t n = write(fd, buf + done, len - done);
        if (n <= 0)
            return; /* nowhere to report it: the report is best effort */
        done += (size_t)n;
    }
}
