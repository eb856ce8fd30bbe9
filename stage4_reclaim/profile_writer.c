/* stage4_reclaim/profile_writer.c — layer 4, the heap profiler: the
 * profile, google-pprof's legacy text heap format, and the files it goes to.
 *
 * HCMALLOC_PROFILE=PREFIX writes PREFIX.<pid>.<n>.heap every
 * HCMALLOC_PROFILE_INTERVAL_BYTES of allocation (but no two closer than
 * HCMALLOC_PROFILE_INTERVAL_MIN_MS) and at exit, and hc_dump_heap_profile(fd)
 * on demand: "heap profile: ... @ heap_v2/T", one line per bucket, then
 * MAPPED_LIBRARIES: and /proc/self/maps (profile_maps.c). Read from the
 * sample table without its locks (profile_internal.h).
 * May touch: the options, common/fd_out.h, the sample table (read only),
 * profile_maps.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/compiler.h"
#include "common/fatal.h"
#include "common/fd_out.h"
#include "common/hcmalloc.h"
#include "stage4_reclaim/options.h"
#include "stage4_reclaim/profile_internal.h"

/* Digits straight into the output's buffer: a dump writes thousands of
 * lines (one per stack and size) and must not hold up the thread that pays
 * for it longer than it must. */
static char *put_decimal_at(char *at, uint64_t v) {
    char digits[20];
    int n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n > 0)
        *at++ = digits[--n];
    return at;
}

static char *put_hex_at(char *at, uint64_t v) {
    *at++ = '0';
    *at++ = 'x';
    for (int shift = (63 - __builtin_clzll(v | 1)) & ~3; shift >= 0; shift -= 4)
        *at++ = "0123456789abcdef"[(v >> shift) & 15];
    return at;
}

/* A stack as a line's tail: " 0x<pc>" per frame and the newline. */
#define STACK_TEXT_MAX (HC_PROFILE_MAX_DEPTH * 19 + 1)

static size_t stack_text(const stack_record *st, char *text) {
    char *at = text;
    for (int k = 0; k < st->depth; k++) {
        *at++ = ' ';
        at = put_hex_at(at, st->pcs[k]);
    }
    *at++ = '\n';
    return (size_t)(at - text);
}

/* The longest line: four counts, the separators, the stack. */
#define PROFILE_LINE_MAX (4 * 20 + 10 + STACK_TEXT_MAX)
_Static_assert(PROFILE_LINE_MAX <= sizeof(((hc_fd_out *)0)->buf), "a line fits the buffer");

/* "<count>: <bytes> [<count>: <bytes>] @" as pprof's reader wants it, then
 * `tail` (a stack's text). */
static void put_line(hc_fd_out *o, size_t n1, size_t s1, size_t n2, size_t s2, const char *tail,
                     size_t tail_len) {
    if (sizeof o->buf - o->len < PROFILE_LINE_MAX)
        fd_out_flush(o);
    char *at = put_decimal_at(o->buf + o->len, n1);
    *at++ = ':';
    *at++ = ' ';
    at = put_decimal_at(at, s1);
    *at++ = ' ';
    *at++ = '[';
    at = put_decimal_at(at, n2);
    *at++ = ':';
    *at++ = ' ';
    at = put_decimal_at(at, s2);
    *at++ = ']';
    *at++ = ' ';
    *at++ = '@';
    memcpy(at, tail, tail_len);
    o->len = (size_t)(at + tail_len - o->buf);
}

/* leaks_only: the leak profile (each bucket's leaked samples, from the
 * leak check, and no others). Without profile_lock (the stacks' chains): samples
 * go on meanwhile, and each line is a bucket's counts at the moment it was
 * read. */
static int write_profile(int fd, int leaks_only) {
    hc_fd_out o = {.fd = fd};
    size_t n1 = 0, s1 = 0, n2 = 0, s2 = 0;
    FOR_EACH_BUCKET(st, b) {
        size_t allocs, frees;
        bucket_counts(b, &allocs, &frees);
        size_t live = leaks_only ? b->leaked : allocs - frees;
        n1 += live;
        s1 += live * b->size;
        n2 += leaks_only ? live : allocs;
        s2 += (leaks_only ? live : allocs) * b->size;
    }
    fd_out_put(&o, "heap profile: ");
    put_line(&o, n1, s1, n2, s2, "", 0);
    /* pprof unsamples each line by 1/p(its size) when it sees the rate;
     * "heapprofile" tells it the counts are exact (every allocation sampled). */
    if (profile_sample_bytes() <= 1) {
        fd_out_put(&o, " heapprofile\n");
    } else {
        fd_out_put(&o, " heap_v2/");
        fd_out_put_u(&o, profile_sample_bytes());
        fd_out_put(&o, "\n");
    }
    for (size_t chain = 0; chain < STACK_HEADS; chain++)
        for (const stack_record *st = first_stack_of_chain(chain); st != NULL; st = st->next) {
            char text[STACK_TEXT_MAX];
            size_t text_len = stack_text(st, text); /* once for all its sizes */
            for (bucket *b = first_bucket_of(st); b != NULL; b = b->next_of_stack) {
                size_t allocs, frees;
                bucket_counts(b, &allocs, &frees);
                size_t live = leaks_only ? b->leaked : allocs - frees;
                if (leaks_only && live == 0)
                    continue;
                size_t shown = leaks_only ? live : allocs;
                put_line(&o, live, live * b->size, shown, shown * b->size, text, text_len);
            }
        }
    fd_out_put(&o, "\nMAPPED_LIBRARIES:\n");
    profile_put_maps(&o);
    return fd_out_finish(&o);
}

static size_t profiles_written; /* atomic */

size_t profile_files_written(void) { return __atomic_load_n(&profiles_written, __ATOMIC_RELAXED); }

int profile_path_with(const char *prefix, const char *tag, char *path, size_t size) {
    if (prefix == NULL)
        return -1;
    hc_fd_out name = {.fd = -1};
    fd_out_put(&name, prefix);
    fd_out_put(&name, ".");
    fd_out_put_u(&name, (uint64_t)getpid());
    fd_out_put(&name, ".");
    fd_out_put(&name, tag);
    fd_out_put(&name, ".heap");
    if (name.len >= size || name.len >= sizeof name.buf)
        return -1;
    memcpy(path, name.buf, name.len);
    path[name.len] = '\0';
    return 0;
}

int profile_path(const char *tag, char *path, size_t size) {
    return profile_path_with(hc_get_options()->profile_prefix, tag, path, size);
}

void profile_write_to(const char *path, int leaks_only) {
    int saved_errno = errno; /* malloc must not change errno when it succeeds */
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        hc_warn("HCMALLOC_PROFILE: cannot create the profile file");
    } else {
        if (write_profile(fd, leaks_only) == 0)
            __atomic_add_fetch(&profiles_written, 1, __ATOMIC_RELAXED);
        close(fd);
    }
    errno = saved_errno;
}

/* PREFIX.<pid>.<tag>.heap. */
static void write_profile_file(const char *tag) {
    char path[4096];
    if (profile_path(tag, path, sizeof path) == 0)
        profile_write_to(path, 0);
}

static unsigned profile_sequence; /* atomic */

void profile_write_numbered(void) {
    char tag[12];
    unsigned n = __atomic_add_fetch(&profile_sequence, 1, __ATOMIC_RELAXED);
    for (int i = 3; i >= 0; i--, n /= 10)
        tag[i] = (char)('0' + n % 10);
    tag[4] = '\0';
    write_profile_file(tag);
}

static uint64_t last_interval_dump_ns; /* atomic; 0: none yet */

static uint64_t monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* the vDSO: no lock, no malloc */
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A profile per interval of bytes, but never two within the minimum gap:
 * a program that allocates 150 GiB a second (the bench's mixed at two
 * threads does) would otherwise write 150 files a second at the default
 * 1 GiB, and spend a sixth of its time writing them (docs/profiling.md,
 * section 6). An interval that ends inside the gap is skipped, not made up
 * later; the first interval profile is never skipped. */
void profile_dump_interval(void) {
    uint64_t gap_ns = (uint64_t)hc_get_options()->profile_interval_min_ms * 1000000u;
    uint64_t now = monotonic_ns();
    uint64_t last = __atomic_load_n(&last_interval_dump_ns, __ATOMIC_RELAXED);
    if (last != 0 && now - last < gap_ns)
        return;
    /* Two threads past the same gap: one writes. */
    if (!__atomic_compare_exchange_n(&last_interval_dump_ns, &last, now, 0, __ATOMIC_RELAXED,
                                     __ATOMIC_RELAXED))
        return;
    profile_write_numbered();
}

/* The profiler library's hc_dump_heap_profile (every other library links
 * common/no_heap_profiler.c's). */
HC_EXPORT int hc_dump_heap_profile(int fd) {
    if (profile_read_sample_bytes() == 0) {
        errno = ENOSYS; /* HCMALLOC_PROFILE_SAMPLE_BYTES=0: not sampling */
        return -1;
    }
    return write_profile(fd, 0);
}
