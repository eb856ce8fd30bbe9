/* common/trace.c — the tier-traffic trace's counters and its writer (only
 * in builds with HC_TRACE_ENABLED=1: see common/trace.h).
 *
 * Shared counters are relaxed atomic adds into static arrays: no lock, no
 * allocation, and the arrays cost nothing until touched. The output is
 * text, one count per line, formatted by hand into a stack buffer and
 * written with write(2), so that a process whose malloc is hcmalloc can
 * write it from an exit handler.
 * May touch: its own counters, clock_gettime, getenv, open/write(2). */
#define _GNU_SOURCE /* clock_gettime, O_CLOEXEC under -std=c11 */
#include "common/trace.h"

#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "common/fd_out.h"

HC_THREAD_LOCAL uint32_t hc_trace_pending_hits[2][HC_NUM_CLASSES];

static uint64_t trace_totals[HC_TRACE_EVENTS][HC_NUM_CLASSES];
static uint32_t trace_buckets[HC_TRACE_BUCKETS][HC_TRACE_EVENTS][HC_NUM_CLASSES];
static uint64_t trace_start_ns;  /* the first event's time; 0 before it */
static uint64_t trace_bucket_ns; /* HCMALLOC_TRACE_BUCKET_MS, read with the first event */
static unsigned trace_last_bucket;

static const char *const event_names[HC_TRACE_EVENTS] = {
    "tc_alloc_hit", "tc_free_hit", "tc_refill", "tc_overflow", "cc_fetch", "cc_return",
    "span_carve", "span_return", "pc_split", "pc_merge", "pc_grow", "pc_release",
    "lock_taken", "lock_waited",
};

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Milliseconds per bucket from the environment (1..60000), else 10. */
static uint64_t bucket_ns_from_env(void) {
    const char *text = getenv("HCMALLOC_TRACE_BUCKET_MS"); /* getenv does not allocate */
    uint64_t ms = 0;
    for (; text != NULL && *text >= '0' && *text <= '9' && ms <= 60000; text++)
        ms = ms * 10 + (uint64_t)(*text - '0');
    return (ms >= 1 && ms <= 60000 ? ms : 10) * 1000000u;
}

static unsigned current_bucket(void) {
    uint64_t now = now_ns();
    uint64_t start = __atomic_load_n(&trace_start_ns, __ATOMIC_ACQUIRE);
    if (HC_UNLIKELY(start == 0)) {
        /* First event: whoever wins the race sets the clock and the width. */
        __atomic_store_n(&trace_bucket_ns, bucket_ns_from_env(), __ATOMIC_RELAXED);
        uint64_t expected = 0;
        __atomic_compare_exchange_n(&trace_start_ns, &expected, now, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE);
        start = __atomic_load_n(&trace_start_ns, __ATOMIC_ACQUIRE);
    }
    uint64_t width = __atomic_load_n(&trace_bucket_ns, __ATOMIC_RELAXED);
    if (width == 0)
        width = bucket_ns_from_env(); /* the winner has not stored it yet */
    uint64_t b = now > start ? (now - start) / width : 0;
    unsigned bucket = b < HC_TRACE_BUCKETS ? (unsigned)b : HC_TRACE_BUCKETS - 1;
    if (bucket > __atomic_load_n(&trace_last_bucket, __ATOMIC_RELAXED))
        __atomic_store_n(&trace_last_bucket, bucket, __ATOMIC_RELAXED); /* a lost race: one bucket short */
    return bucket;
}

static void add_counts(hc_trace_event event, unsigned cls, uint64_t n) {
    if (cls >= HC_NUM_CLASSES || n == 0)
        return;
    __atomic_fetch_add(&trace_totals[event][cls], n, __ATOMIC_RELAXED);
    __atomic_fetch_add(&trace_buckets[current_bucket()][event][cls], (uint32_t)n, __ATOMIC_RELAXED);
}

void hc_trace_flush_hits(hc_trace_event event, unsigned cls) {
    uint32_t *pending = &hc_trace_pending_hits[event == HC_TRACE_TC_FREE_HIT][cls];
    add_counts(event, cls, *pending);
    *pending = 0;
}

void hc_trace_add(hc_trace_event event, unsigned cls, uint64_t n) {
    /* A miss flushes the hits before it, so that this thread's hits and
     * misses of the class land in the buckets of their time. */
    if (event == HC_TRACE_TC_REFILL)
        hc_trace_flush_hits(HC_TRACE_TC_ALLOC_HIT, cls);
    else if (event == HC_TRACE_TC_OVERFLOW)
        hc_trace_flush_hits(HC_TRACE_TC_FREE_HIT, cls);
    add_counts(event, cls, n);
}

/* ---- Writing it out ------------------------------------------------------------- */

/* The format (one record per line, fields separated by spaces):
 *   hcmalloc-trace 1
 *   bucket_ms MS            buckets BUCKETS_USED
 *   event NAME              (in order: the event numbers below)
 *   class CLS SIZE          (class 0: size 0, "no class")
 *   total EVENT CLS COUNT   (non-zero counts only)
 *   b BUCKET EVENT CLS COUNT */
/* One record: `tag`, then `count` numbers, space-separated. */
static void put_record(hc_fd_out *o, const char *tag, const uint64_t *fields, int count) {
    fd_out_put(o, tag);
    for (int i = 0; i < count; i++) {
        fd_out_put(o, " ");
        fd_out_put_u(o, fields[i]);
    }
    fd_out_put(o, "\n");
}

int hc_trace_write(int fd) {
    for (unsigned cls = 1; cls < HC_NUM_CLASSES; cls++) {
        hc_trace_flush_hits(HC_TRACE_TC_ALLOC_HIT, cls);
        hc_trace_flush_hits(HC_TRACE_TC_FREE_HIT, cls);
    }
    hc_fd_out out = {.fd = fd};
    uint64_t width = __atomic_load_n(&trace_bucket_ns, __ATOMIC_RELAXED);
    unsigned used = __atomic_load_n(&trace_start_ns, __ATOMIC_RELAXED) == 0
                        ? 0 : __atomic_load_n(&trace_last_bucket, __ATOMIC_RELAXED) + 1;
    fd_out_put(&out, "hcmalloc-trace 1\n");
    put_record(&out, "bucket_ms", &(uint64_t){(width ? width : bucket_ns_from_env()) / 1000000u}, 1);
    put_record(&out, "buckets", &(uint64_t){used}, 1);
    for (int e = 0; e < HC_TRACE_EVENTS; e++) {
        fd_out_put(&out, "event ");
        fd_out_put(&out, event_names[e]);
        fd_out_put(&out, "\n");
    }
    for (unsigned cls = 0; cls < HC_NUM_CLASSES; cls++)
        put_record(&out, "class", (uint64_t[]){cls, cls == 0 ? 0 : sc_size(cls)}, 2);
    for (int e = 0; e < HC_TRACE_EVENTS; e++)
        for (unsigned cls = 0; cls < HC_NUM_CLASSES; cls++) {
            uint64_t n = __atomic_load_n(&trace_totals[e][cls], __ATOMIC_RELAXED);
            if (n != 0)
                put_record(&out, "total", (uint64_t[]){(uint64_t)e, cls, n}, 3);
        }
    for (unsigned b = 0; b < used; b++)
        for (int e = 0; e < HC_TRACE_EVENTS; e++)
            for (unsigned cls = 0; cls < HC_NUM_CLASSES; cls++) {
                uint32_t n = __atomic_load_n(&trace_buckets[b][e][cls], __ATOMIC_RELAXED);
                if (n != 0)
                    put_record(&out, "b", (uint64_t[]){b, (uint64_t)e, cls, n}, 4);
            }
    return fd_out_finish(&out);
}

/* HCMALLOC_TRACE=FILE: the trace is written there when the process exits. */
__attribute__((destructor)) static void trace_write_at_exit(void) {
    const char *path = getenv("HCMALLOC_TRACE");
    if (path == NULL || *path == '\0')
        return;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return; /* nowhere to write it: the trace is best effort */
    hc_trace_write(fd);
    close(fd);
}
