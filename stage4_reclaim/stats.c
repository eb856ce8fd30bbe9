/* stage4_reclaim/stats.c — layer 4: hc_print_stats, the text report.
 *
 * One snapshot per layer (hc_get_stats, the budget, the page cache census),
 * each taken under that layer's lock; the report is not one atomic moment
 * across layers, and says so. Nothing here runs on the fast path.
 * May touch: the public stats, tc_budget_snapshot, pc_get_census, the
 * profiler's counters, write(2). */
#define _GNU_SOURCE
#include "stage4_reclaim/stats.h"

#include "common/fd_out.h"
#include "common/hcmalloc.h"
#include "stage3_pagecache/page_cache.h"
#include "stage4_reclaim/page_release.h"
#include "stage4_reclaim/profile.h"
#include "stage4_reclaim/reclaim.h"

/* "<label>: <bytes> (<MiB>.<tenth> MiB)" and a newline. */
static void put_bytes_line(hc_fd_out *o, const char *label, size_t bytes) {
    fd_out_put(o, label);
    fd_out_put_u_width(o, bytes, 14);
    fd_out_put(o, " (");
    size_t tenths = (bytes * 10 + (1 << 19)) >> 20; /* MiB, rounded to 0.1 */
    fd_out_put_u_width(o, tenths / 10, 7);
    fd_out_put(o, ".");
    fd_out_put_u(o, tenths % 10);
    fd_out_put(o, " MiB)\n");
}

/* The whole report, to `o`. */
static void write_report(hc_fd_out *o) {
    hc_stats s;
    hc_get_stats(&s);
    tc_budget_stats b;
    tc_budget_snapshot(&b);
    pc_census c;
    pc_get_census(&c);

    fd_out_put(o, "------------------------------------------------------------\n");
    fd_out_put(o, "hcmalloc (");
    fd_out_put(o, hc_stage_name());
    fd_out_put(o, ")\n");
    put_bytes_line(o, "bytes in use by the program        ", s.bytes_in_use);
    put_bytes_line(o, "free in thread caches              ", s.thread_cache_bytes);
    put_bytes_line(o, "free in central buckets            ", s.central_cache_bytes);
    put_bytes_line(o, "free in the page cache (backed)    ", s.page_cache_free_bytes);
    put_bytes_line(o, "released to the OS (address kept)  ", s.released_bytes);
    put_bytes_line(o, "mapped from the OS                 ", s.os_mapped_bytes);
    put_bytes_line(o, "  of which metadata                ", s.metadata_bytes);
    fd_out_put(o, "------------------------------------------------------------\n");
    put_bytes_line(o, "thread-cache budget                ", b.budget_bytes);
    put_bytes_line(o, "  held by live and parked caches   ", b.share_bytes);
    put_bytes_line(o, "  reserved by their lists' limits  ", b.capacity_bytes);
    fd_out_put(o, "live thread caches                 ");
    fd_out_put_u_width(o, b.live_caches, 14);
    fd_out_put(o, "\npage-cache regions / free spans    ");
    fd_out_put_u_width(o, c.regions, 14);
    fd_out_put(o, " /");
    fd_out_put_u_width(o, c.free_spans, 8);
    fd_out_put(o, "\nlargest free span (pages)          ");
    fd_out_put_u_width(o, c.largest_free_pages, 14);
    fd_out_put(o, "\ndirectly mapped blocks             ");
    fd_out_put_u_width(o, c.direct_spans, 14);
    fd_out_put(o, "\nmadvise calls (releases)           ");
    fd_out_put_u_width(o, pc_release_calls(), 14);
    fd_out_put(o, "\nout-of-memory rescues (retries won)  ");
    fd_out_put_u_width(o, s.oom_rescues, 12);
    fd_out_put(o, "\nheap limit (HCMALLOC_HEAP_LIMIT_MB)");
    if (s.heap_limit_bytes == 0) {
        fd_out_put(o, "          none");
    } else {
        fd_out_put_u_width(o, s.heap_limit_bytes >> 20, 10);
        fd_out_put(o, " MiB");
    }
    fd_out_put(o, "\n  refusals to map at the limit     ");
    fd_out_put_u_width(o, s.heap_limit_hits, 14);
    hc_profile_stats p;
    hc_profile_get_stats(&p);
    if (p.sample_bytes != 0 && p.samples != 0) {
        fd_out_put(o, "\nheap profile: sampled / still live ");
        fd_out_put_u_width(o, p.samples, 14);
        fd_out_put(o, " /");
        fd_out_put_u_width(o, p.live_samples, 8);
        put_bytes_line(o, "\n  live bytes they stand for        ", p.live_estimate);
    } else {
        fd_out_put(o, "\n");
    }
    fd_out_put(o, "(each layer counted under its own lock: the figures are not one instant)\n");
    fd_out_put(o, "------------------------------------------------------------\n");
}

size_t hc_format_stats(char *buf, size_t size) {
    if (size == 0)
        return 0;
    hc_fd_out o;
    fd_out_to_string(&o, buf, size);
    write_report(&o);
    fd_out_flush(&o);
    return o.text_len;
}

/* Best effort: if the write fails there is nowhere to report it. */
void hc_print_stats(int fd) {
    hc_fd_out o = HC_FD_OUT_INIT(fd);
    write_report(&o);
    fd_out_finish(&o);
}
