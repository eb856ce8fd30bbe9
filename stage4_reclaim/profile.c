/* stage4_reclaim/profile.c — layer 4: the sampling heap profiler.
 *
 * Sampling (HC_SAMPLING builds only, layer_hooks.h): each thread's bytes are
 * a Poisson process of rate 1/T, T = HCMALLOC_PROFILE_SAMPLE_BYTES: the
 * distance to the next sample point is drawn from an exponential
 * distribution of mean T, and an allocation is sampled when a point falls
 * in its bytes, with probability p(s) = 1 - exp(-s/T) whatever came before
 * (the distribution has no memory). So a sampled block of s bytes stands
 * for s / p(s) bytes and 1 / p(s) blocks, an unbiased estimate for every
 * size (docs/profiling.md has the proof and the error). T = 1 samples every
 * allocation: exact, and slow.
 *
 * Records: one bucket per (stack, size), counting sampled allocations and
 * frees, from common/pool.h, and one record per live sampled block (its
 * address and bucket, on a list the leak check scans); a sampled block's
 * span keeps its record (layer_hooks.h), so its free finds the bucket and
 * searches nothing. Two locks, taken only by sampled allocations and
 * frees (one sample per 2 MiB allocated, by default): profile_lock for the
 * bucket table (allocations), blocks_lock for the list of live blocks
 * (allocations and frees); dumps do without them (buckets are never freed,
 * and are published and counted with atomics): a dump takes milliseconds,
 * and every thread's next sample would wait.
 *
 * The stack: from the .eh_frame tables every x86-64 object carries, so
 * programs built without frame pointers get whole stacks too (a
 * frame-pointer walk would stop, or wander, at the first frame compiled
 * without one: most of libc, and all -O2 code by default). libunwind's
 * unw_backtrace when libunwind8 is installed (it caches what it read per
 * code address: about ten times fewer instructions per sample), else
 * libgcc's _Unwind_Backtrace (HCMALLOC_PROFILE_UNWINDER=libgcc forces it).
 * Neither allocates, but a first call may bind PLT entries and set caches
 * up: the library's constructor calls both once ("priming"), before the
 * program's first sampled malloc.
 * Frames inside this library are skipped (found by address: the library's
 * executable segment, looked up at load), so a stack starts at the caller
 * of malloc or operator new.
 *
 * Profiles: HCMALLOC_PROFILE=PREFIX writes PREFIX.<pid>.<n>.heap every
 * HCMALLOC_PROFILE_INTERVAL_BYTES of allocation (but no two closer than
 * HCMALLOC_PROFILE_INTERVAL_MIN_MS) and at exit, and
 * hc_dump_heap_profile(fd) on demand: "heap profile: ... @ heap_v2/T", one
 * line per bucket, then MAPPED_LIBRARIES: and /proc/self/maps (read with
 * read(2) in pieces, no buffer to grow). HCMALLOC_LEAK_CHECK=1 reports at
 * exit the sampled blocks still live that nothing reachable points to
 * (leak_scan.h), named from the objects' symbol tables (elf_symbols.h).
 * May touch: the options, common/pool.h, common/lock.h, common/fd_out.h,
 * common/os.h (the kept copy of /proc/self/maps),
 * libgcc's unwinder, libunwind (dlopen'd at load), the loader's
 * dl_iterate_phdr (at load, and for the dumps' maps), fork.c, and at exit
 * the leak check's scan (leak_scan.h) and symbols (elf_symbols.h). */
#define _GNU_SOURCE
#include "stage4_reclaim/profile.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <unwind.h>

#include "common/compiler.h"
#include "common/fatal.h"
#include "common/fd_out.h"
#include "common/hcmalloc.h"
#include "common/lock.h"
#include "common/os.h"
#include "common/pool.h"
#include "stage3_pagecache/layer_hooks.h"
#include "stage4_reclaim/elf_symbols.h"
#include "stage4_reclaim/leak_scan.h"
#include "stage4_reclaim/options.h"
#include "stage4_reclaim/reclaim.h"

#if HC_SAMPLING

/* ---- Numbers without libm ------------------------------------------------------ */

/* ln(x) for x > 0: x = m 2^e with m in [sqrt(1/2), sqrt(2)), and
 * ln m = 2 atanh(z) = 2 (z + z^3/3 + z^5/5 ...), z = (m-1)/(m+1), |z| < 0.172:
 * twelve terms are past double precision (0.172^25 < 1e-19). Every sample
 * draws a distance; twenty divisions by k were a quarter of its time, so
 * the reciprocals are constants. */
static double log_of(double x) {
    static const double odd_reciprocals[] = {1.0 / 1,  1.0 / 3,  1.0 / 5,  1.0 / 7,
                                             1.0 / 9,  1.0 / 11, 1.0 / 13, 1.0 / 15,
                                             1.0 / 17, 1.0 / 19, 1.0 / 21, 1.0 / 23};
    union { double d; uint64_t u; } v = {x};
    int e = (int)((v.u >> 52) & 0x7ff) - 1023;
    v.u = (v.u & ~((uint64_t)0x7ff << 52)) | ((uint64_t)1023 << 52);
    if (v.d > 1.41421356237309504880) {
        v.d *= 0.5; /* exact */
        e++;
    }
    double z = (v.d - 1) / (v.d + 1), z2 = z * z, term = z, sum = 0;
    for (size_t k = 0; k < sizeof odd_reciprocals / sizeof odd_reciprocals[0]; k++) {
        sum += term * odd_reciprocals[k];
        term *= z2;
    }
    return 2 * sum + e * 0.69314718055994530942;
}

/* 1 - exp(-x) for x >= 0: exp(-x/2^k) by its series, squared k times. */
static double one_minus_exp_neg(double x) {
    if (x > 700)
        return 1;
    int k = 0;
    double y = x;
    while (y > 1.0 / 1024) {
        y /= 2;
        k++;
    }
    double e = 1 - y + y * y / 2 - y * y * y / 6 + y * y * y * y / 24;
    while (k-- > 0)
        e *= e;
    return 1 - e;
}

/* ---- The sampler: per-thread countdown ------------------------------------------- */

/* hc_sample_countdown (layer_hooks.h) starts at 0: the thread's first call arms it. */
static HC_THREAD_LOCAL intptr_t armed_distance; /* the countdown's value when armed */
static HC_THREAD_LOCAL uint64_t rng_state;

static size_t sample_bytes;     /* T; 0: off. From the options, at the first sample point */

/* Every thread stores the same value (the option), so a relaxed store is
 * enough: it only keeps those stores from being a data race. */
static size_t current_sample_bytes(void) { return __atomic_load_n(&sample_bytes, __ATOMIC_RELAXED); }

static size_t read_sample_bytes(void) {
    size_t t = hc_get_options()->profile_sample_bytes;
    __atomic_store_n(&sample_bytes, t, __ATOMIC_RELAXED);
    return t;
}
static uint64_t allocated_bytes; /* all threads' bytes counted down so far (atomic) */
static uint64_t next_interval_dump; /* atomic */
static uint64_t seed_counter;

static uint64_t splitmix(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The distance to the next sample point: exponential, mean T. */
static intptr_t draw_distance(void) {
    if (current_sample_bytes() == 1)
        return 0; /* every allocation (exact mode) */
    if (rng_state == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        rng_state = (uint64_t)ts.tv_nsec ^ ((uint64_t)(uintptr_t)&rng_state << 16) ^
                    (__atomic_add_fetch(&seed_counter, 1, __ATOMIC_RELAXED) << 40);
    }
    double u = (double)((splitmix(&rng_state) >> 11) + 1) / 9007199254740992.0; /* (0, 1] */
    double d = -log_of(u) * (double)current_sample_bytes();
    if (d < 1)
        return 1; /* 0 marks a thread not yet armed */
    return d >= (double)(INTPTR_MAX / 2) ? INTPTR_MAX / 2 : (intptr_t)d;
}

static void dump_interval_profile(void);

int hc_layer_sample_due(size_t size) {
    /* Read here, not in the constructor: the loader's mallocs come first. */
    read_sample_bytes();
    if (current_sample_bytes() == 0) {
        hc_sample_countdown = INTPTR_MAX; /* off: out of reach (2^63 bytes) */
        return 0;
    }
    int first = armed_distance == 0 && current_sample_bytes() != 1;
    /* The bytes this thread counted down since it was last armed. */
    uint64_t counted = (uint64_t)(armed_distance - hc_sample_countdown);
    uint64_t total = __atomic_add_fetch(&allocated_bytes, counted, __ATOMIC_RELAXED);
    armed_distance = draw_distance();
    hc_sample_countdown = armed_distance;
    if (first) {
        /* The thread's first request: its stream starts here; the request
         * is sampled if the first point falls in it. */
        hc_sample_countdown -= (intptr_t)size;
        if (hc_sample_countdown >= 0)
            return 0;
        armed_distance = draw_distance();
        hc_sample_countdown = armed_distance;
    }
    uint64_t due = __atomic_load_n(&next_interval_dump, __ATOMIC_RELAXED);
    if (due != 0 && total >= due &&
        __atomic_compare_exchange_n(&next_interval_dump, &due,
                                    due + hc_get_options()->profile_interval_bytes, 0,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        dump_interval_profile();
    return 1;
}

/* ---- The stack -------------------------------------------------------------------- */

static uintptr_t own_text_start, own_text_end; /* this library's code */

/* dl_iterate_phdr callback: the executable segment holding hc_malloc. */
static int find_own_text(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    uintptr_t self = (uintptr_t)data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (self >= start && self < start + ph->p_memsz) {
            own_text_start = start;
            own_text_end = start + ph->p_memsz;
            return 1;
        }
    }
    return 0;
}

typedef struct stack_walk {
    uintptr_t pcs[HC_PROFILE_MAX_DEPTH];
    int depth;
    int in_caller; /* past this library's frames */
} stack_walk;

static _Unwind_Reason_Code stack_frame(struct _Unwind_Context *ctx, void *data) {
    stack_walk *w = data;
    uintptr_t pc = (uintptr_t)_Unwind_GetIP(ctx);
    if (pc == 0)
        return _URC_END_OF_STACK;
    if (!w->in_caller) {
        if (pc >= own_text_start && pc < own_text_end)
            return _URC_NO_REASON;
        w->in_caller = 1;
    }
    w->pcs[w->depth++] = pc;
    return w->depth == HC_PROFILE_MAX_DEPTH ? _URC_END_OF_STACK : _URC_NO_REASON;
}

/* libunwind's unw_backtrace, when libunwind8 is installed: the same tables,
 * read once per code address and then cached (per thread), so a stack of
 * known frames costs tens of instructions per frame instead of libgcc's
 * thousand or so (a table search per frame). Opened at load with
 * RTLD_LOCAL, so that its own _Unwind_* names never replace libgcc's for the
 * program's C++ exceptions. */
typedef int (*backtrace_fn)(void **pcs, int size);
static backtrace_fn cached_backtrace;

#define OWN_FRAMES_MAX 16 /* allocator frames under the program's: skipped */

static void take_stack(stack_walk *w) {
    w->depth = 0;
    w->in_caller = 0;
    if (cached_backtrace == NULL) {
        _Unwind_Backtrace(stack_frame, w);
        return;
    }
    void *raw[HC_PROFILE_MAX_DEPTH + OWN_FRAMES_MAX];
    int n = cached_backtrace(raw, HC_PROFILE_MAX_DEPTH + OWN_FRAMES_MAX);
    for (int i = 0; i < n && w->depth < HC_PROFILE_MAX_DEPTH; i++) {
        uintptr_t pc = (uintptr_t)raw[i];
        if (!w->in_caller && pc >= own_text_start && pc < own_text_end)
            continue;
        w->in_caller = 1;
        w->pcs[w->depth++] = pc;
    }
}

/* libunwind, if present; its caches per thread (no lock, no signal mask
 * changes per frame: the global cache takes both). */
static void open_libunwind(void) {
#if HC_TSAN
    /* Under ThreadSanitizer a multi-threaded program died silently inside
     * the sampled path with libunwind (profiler_stress_test, --config=tsan),
     * and runs with libgcc's unwinder: keep to that one there. */
    return;
#endif
    const char *unwinder = getenv("HCMALLOC_PROFILE_UNWINDER"); /* "libgcc": the fallback alone */
    if (unwinder != NULL && strcmp(unwinder, "libgcc") == 0)
        return;
    void *lib = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL)
        return; /* libgcc's unwinder alone: slower, as correct */
    typedef int (*policy_fn)(void *space, int policy);
    policy_fn set_policy = (policy_fn)dlsym(lib, "_ULx86_64_set_caching_policy");
    void **space = (void **)dlsym(lib, "_ULx86_64_local_addr_space");
    backtrace_fn backtrace = (backtrace_fn)dlsym(lib, "unw_backtrace");
    if (set_policy == NULL || space == NULL || backtrace == NULL)
        return;
    set_policy(*space, 2 /* UNW_CACHE_PER_THREAD */);
    cached_backtrace = backtrace;
}

/* ---- The records --------------------------------------------------------------- */

/* A distinct call stack. Its buckets (one per size) hang from it, so that a
 * dump writes the stack's text once for all its lines. */
typedef struct stack_record {
    struct stack_record *next; /* in its hash chain (and the pool's link while free) */
    struct bucket *buckets;    /* this stack's, one per size */
    uint64_t hash;
    int depth;
    uintptr_t pcs[HC_PROFILE_MAX_DEPTH];
} stack_record;

typedef struct bucket {
    struct bucket *next;       /* in its hash chain (and the pool's link while free) */
    struct bucket *next_of_stack;
    const stack_record *stack;
    size_t size;               /* bytes asked for */
    /* Sampled. allocs is written under profile_lock, frees by the freeing
     * thread (an atomic add, no lock); dumps read both without the lock, frees
     * first with an acquire, so that they never see more frees than
     * allocations. */
    size_t allocs, frees;
    /* The leak check's, under profile_lock: live samples at exit that
     * nothing reachable points to, and those something does. */
    size_t leaked, reachable;
} bucket;

/* A sampled block not yet freed: what its span keeps (span->sample_record).
 * On the list of live blocks, under blocks_lock. */
typedef struct sampled_block {
    struct sampled_block *next, *prev;
    bucket *bucket;
    uintptr_t start;
} sampled_block;

#define STACK_HEADS 1024
#define BUCKET_HEADS 4096

static hc_lock profile_lock = HC_LOCK_INITIALIZER;
static hc_pool stack_pool = HC_POOL_INITIALIZER(sizeof(stack_record));
static hc_pool bucket_pool = HC_POOL_INITIALIZER(sizeof(bucket));
static hc_pool block_pool = HC_POOL_INITIALIZER(sizeof(sampled_block));
/* The live sampled blocks, under blocks_lock: a lock of their own, so that
 * sampled frees, which take it, never wait for a sampled allocation's
 * bucket search (profile_lock). Taken after profile_lock where both are. */
static hc_lock blocks_lock = HC_LOCK_INITIALIZER;
static sampled_block *live_blocks;
/* Under profile_lock. Static, untouched until used: no start-up cost. Stacks
 * and buckets are never freed; a record joins its chain's head (stack_heads,
 * bucket_heads, its stack's buckets) with a release store, after its fields:
 * dumps walk stack_heads and the stacks' buckets with acquire loads and no
 * lock. */
static stack_record *stack_heads[STACK_HEADS];
static bucket *bucket_heads[BUCKET_HEADS];
static size_t samples, dropped;
static size_t live_samples; /* atomic: sampled blocks not yet freed */

static stack_record *stack_for(const stack_walk *w, uint64_t h) {
    stack_record **head = &stack_heads[h % STACK_HEADS];
    for (stack_record *st = *head; st != NULL; st = st->next)
        if (st->hash == h && st->depth == w->depth &&
            memcmp(st->pcs, w->pcs, (size_t)w->depth * sizeof w->pcs[0]) == 0)
            return st;
    stack_record *st = pool_alloc(&stack_pool);
    if (st == NULL)
        return NULL;
    st->hash = h;
    st->depth = w->depth;
    memcpy(st->pcs, w->pcs, (size_t)w->depth * sizeof w->pcs[0]);
    st->next = *head;
    __atomic_store_n(head, st, __ATOMIC_RELEASE);
    return st;
}

/* The bucket of (stack, size). profile_lock held. */
static bucket *bucket_for(const stack_walk *w, size_t size) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < w->depth; i++)
        h = (h ^ w->pcs[i]) * 0x100000001b3ull;
    uint64_t hs = (h ^ size) * 0x100000001b3ull;
    bucket **head = &bucket_heads[hs % BUCKET_HEADS];
    for (bucket *b = *head; b != NULL; b = b->next)
        if (b->size == size && b->stack->hash == h && b->stack->depth == w->depth &&
            memcmp(b->stack->pcs, w->pcs, (size_t)w->depth * sizeof w->pcs[0]) == 0)
            return b;
    stack_record *st = stack_for(w, h);
    bucket *b = st != NULL ? pool_alloc(&bucket_pool) : NULL;
    if (b == NULL)
        return NULL;
    b->stack = st;
    b->size = size;
    b->next = *head;
    b->next_of_stack = st->buckets;
    __atomic_store_n(head, b, __ATOMIC_RELEASE);
    __atomic_store_n(&st->buckets, b, __ATOMIC_RELEASE);
    return b;
}

/* Bucket counts as a dump without the lock reads them. */
static void bucket_counts(const bucket *b, size_t *allocs, size_t *frees) {
    *frees = __atomic_load_n(&b->frees, __ATOMIC_ACQUIRE);
    *allocs = __atomic_load_n(&b->allocs, __ATOMIC_RELAXED);
}

static size_t live_count(const bucket *b) {
    size_t allocs, frees;
    bucket_counts(b, &allocs, &frees);
    return allocs - frees;
}

/* Every bucket, stack by stack, as a dump walks them (with or without the lock). */
static stack_record *first_stack_of_chain(size_t i) {
    return __atomic_load_n(&stack_heads[i], __ATOMIC_ACQUIRE);
}
static bucket *first_bucket_of(const stack_record *st) {
    return __atomic_load_n(&st->buckets, __ATOMIC_ACQUIRE);
}
#define FOR_EACH_BUCKET(st, b)                                                    \
    for (size_t chain_ = 0; chain_ < STACK_HEADS; chain_++)                       \
        for (const stack_record *st = first_stack_of_chain(chain_); st != NULL;   \
             st = st->next)                                                       \
            for (bucket *b = first_bucket_of(st); b != NULL; b = b->next_of_stack)

static int unwinder_primed; /* atomic: profile_start ran */

void *hc_layer_on_sampled_alloc(void *block, size_t size) {
    stack_walk w;
    w.depth = 0; /* not the frames: zeroing them was a tenth of a sample's time */
    /* Before the library's constructor primed the unwinder (the loader's
     * own first mallocs) a sample keeps no stack rather than risk it. */
    if (__atomic_load_n(&unwinder_primed, __ATOMIC_ACQUIRE))
        take_stack(&w); /* before the lock: the unwinder takes the loader's */
    hc_lock_acquire(&profile_lock);
    samples++;
    bucket *b = bucket_for(&w, size);
    sampled_block *r = b != NULL ? pool_alloc(&block_pool) : NULL;
    if (r == NULL) {
        dropped++;
    } else {
        r->bucket = b;
        r->start = (uintptr_t)block;
        __atomic_store_n(&b->allocs, b->allocs + 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&live_samples, 1, __ATOMIC_RELAXED);
    }
    hc_lock_release(&profile_lock);
    if (r != NULL) {
        hc_lock_acquire(&blocks_lock);
        r->prev = NULL;
        r->next = live_blocks;
        if (live_blocks != NULL)
            live_blocks->prev = r;
        live_blocks = r;
        hc_lock_release(&blocks_lock);
    }
    return r;
}

/* The bucket's count needs no lock (the bucket never goes away); the list
 * does. Called before the block's pages go back (stage 3's large_free), so
 * a leak scan, which holds blocks_lock, reads no block that is being freed. */
void hc_layer_on_sampled_free(void *block, void *record) {
    (void)block;
    sampled_block *r = record;
    if (r == NULL)
        return; /* its sample was dropped (no memory for its records) */
    hc_lock_acquire(&blocks_lock);
    if (r->prev != NULL)
        r->prev->next = r->next;
    else
        live_blocks = r->next;
    if (r->next != NULL)
        r->next->prev = r->prev;
    hc_lock_release(&blocks_lock);
    __atomic_add_fetch(&r->bucket->frees, 1, __ATOMIC_RELEASE);
    __atomic_sub_fetch(&live_samples, 1, __ATOMIC_RELAXED);
    pool_free(&block_pool, r);
}

/* ---- Estimates ------------------------------------------------------------------- */

/* 1 / p(size): how many allocations of `size` bytes one sample stands for. */
static double weight(size_t size) {
    if (current_sample_bytes() <= 1)
        return 1;
    return 1 / one_minus_exp_neg((double)(size == 0 ? 1 : size) / (double)current_sample_bytes());
}

/* ---- Writing a profile -------------------------------------------------------------- */

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

/* /proc/self/maps, copied in pieces through the output's buffer. */
static void put_maps_uncached(hc_fd_out *o) {
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    fd_out_flush(o);
    for (;;) {
        ssize_t n = read(fd, o->buf, sizeof o->buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        o->len = (size_t)n;
        fd_out_flush(o);
    }
    close(fd);
}

/* The MAPPED_LIBRARIES section, kept between dumps: the kernel walks every
 * mapping to write /proc/self/maps (a tenth of an interval dump's time on
 * the bench), and the lines pprof reads, the code of the program and its
 * libraries, change only when the loader adds or removes an object, which
 * dl_iterate_phdr counts. Its anonymous lines may then be stale; pprof
 * ignores them. Under maps_lock, taken by dumps alone and never around a
 * loader call (the loader holds its lock while it calls malloc). */
static hc_lock maps_lock = HC_LOCK_INITIALIZER;
static char *maps_text; /* os_map'd */
static size_t maps_len, maps_capacity;
static unsigned long long maps_loads = ~0ull; /* dlpi_adds + dlpi_subs when read; none yet */

static int read_load_count(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    *(unsigned long long *)data = info->dlpi_adds + info->dlpi_subs;
    return 1; /* the first object says it all */
}

/* Reads /proc/self/maps into maps_text, growing it; 0, or -1 (no memory). */
static int refresh_maps_locked(void) {
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    maps_len = 0;
    for (;;) {
        if (maps_capacity - maps_len < 4096) {
            size_t bigger = maps_capacity == 0 ? 64 << 10 : maps_capacity * 2;
            char *text = os_map(bigger);
            if (text == NULL) {
                close(fd);
                return -1;
            }
            if (maps_text != NULL) {
                memcpy(text, maps_text, maps_len);
                os_unmap(maps_text, maps_capacity);
            }
            maps_text = text;
            maps_capacity = bigger;
        }
        ssize_t n = read(fd, maps_text + maps_len, maps_capacity - maps_len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        maps_len += (size_t)n;
    }
    close(fd);
    return 0;
}

static void put_maps(hc_fd_out *o) {
    unsigned long long loads = 0;
    dl_iterate_phdr(read_load_count, &loads); /* before maps_lock: the loader's lock */
    hc_lock_acquire(&maps_lock);
    if (loads != maps_loads)
        maps_loads = refresh_maps_locked() == 0 ? loads : ~0ull;
    if (maps_loads == ~0ull) {
        hc_lock_release(&maps_lock);
        put_maps_uncached(o);
        return;
    }
    for (size_t done = 0; done < maps_len;) {
        size_t piece = maps_len - done;
        if (piece > sizeof o->buf - o->len)
            piece = sizeof o->buf - o->len;
        memcpy(o->buf + o->len, maps_text + done, piece);
        o->len += piece;
        done += piece;
        if (o->len == sizeof o->buf)
            fd_out_flush(o);
    }
    fd_out_flush(o);
    hc_lock_release(&maps_lock);
}

/* leaks_only: the leak profile (each bucket's leaked samples, from the
 * leak check, and no others). Without profile_lock (bucket_heads): samples
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
    if (current_sample_bytes() <= 1) {
        fd_out_put(&o, " heapprofile\n");
    } else {
        fd_out_put(&o, " heap_v2/");
        fd_out_put_u(&o, current_sample_bytes());
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
    put_maps(&o);
    return fd_out_finish(&o);
}

static size_t profiles_written; /* atomic */

/* PREFIX.<pid>.<tag>.heap into path; 0, or -1 if there is no prefix or it
 * does not fit. */
static int profile_path_with(const char *prefix, const char *tag, char *path, size_t size) {
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

static int profile_path(const char *tag, char *path, size_t size) {
    return profile_path_with(hc_get_options()->profile_prefix, tag, path, size);
}

/* A profile written whole to `path`. */
static void write_profile_to(const char *path, int leaks_only) {
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
        write_profile_to(path, 0);
}

static unsigned profile_sequence; /* atomic */

static void write_numbered_profile(void) {
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
static void dump_interval_profile(void) {
    uint64_t gap_ns = (uint64_t)hc_get_options()->profile_interval_min_ms * 1000000u;
    uint64_t now = monotonic_ns();
    uint64_t last = __atomic_load_n(&last_interval_dump_ns, __ATOMIC_RELAXED);
    if (last != 0 && now - last < gap_ns)
        return;
    /* Two threads past the same gap: one writes. */
    if (!__atomic_compare_exchange_n(&last_interval_dump_ns, &last, now, 0, __ATOMIC_RELAXED,
                                     __ATOMIC_RELAXED))
        return;
    write_numbered_profile();
}

int hc_profile_dump(int fd) {
    if (read_sample_bytes() == 0) {
        errno = ENOSYS; /* HCMALLOC_PROFILE_SAMPLE_BYTES=0: not sampling */
        return -1;
    }
    return write_profile(fd, 0);
}

/* ---- The leak check at exit -------------------------------------------------------- */

/* The program's own path (the loader calls it ""), for frames and pprof. */
static const char *program_path(void) {
    static char path[4096];
    if (path[0] == '\0') {
        ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
        if (n <= 0)
            return "PROGRAM";
        path[n] = '\0';
    }
    return path;
}

/* "name+0x12 (file)" where a symbol covers the address (the file's own
 * symbol table first: elf_symbols.h), else the file and the address in it;
 * pprof on the leak profile adds the lines. */
static void put_frame(hc_fd_out *o, uintptr_t pc) {
    elf_symbol sym;
    fd_out_put(o, "    ");
    fd_out_put_hex(o, pc);
    if (elf_symbol_of(pc, &sym)) {
        fd_out_put(o, " ");
        if (sym.name != NULL) {
            fd_out_put(o, sym.name);
            fd_out_put(o, "+");
            fd_out_put_hex(o, sym.offset);
        } else {
            fd_out_put_hex(o, sym.file_offset);
        }
        fd_out_put(o, " (");
        fd_out_put(o, sym.file[0] != '\0' ? sym.file : program_path());
        fd_out_put(o, ")");
    }
    fd_out_put(o, "\n");
}

/* The live blocks by address, for the scan's binary search: a heap sort
 * (no libc qsort: glibc's may call malloc), n log n for the hundred
 * thousand blocks of a run that samples everything. */
static void sift_down(leak_block *a, size_t root, size_t n) {
    for (;;) {
        size_t child = 2 * root + 1;
        if (child >= n)
            return;
        if (child + 1 < n && a[child + 1].start > a[child].start)
            child++;
        if (a[root].start >= a[child].start)
            return;
        leak_block t = a[root];
        a[root] = a[child];
        a[child] = t;
        root = child;
    }
}

static void sort_by_address(leak_block *a, size_t n) {
    for (size_t i = n / 2; i-- > 0;)
        sift_down(a, i, n);
    for (size_t end = n; end-- > 1;) {
        leak_block t = a[0];
        a[0] = a[end];
        a[end] = t;
        sift_down(a, 0, end);
    }
}

static double estimated_bytes(const bucket *b, size_t samples_of_it) {
    return (double)samples_of_it * weight(b->size) * (double)b->size;
}

/* The buckets with leaked (or, `reachable`, reachable) samples into `out`,
 * biggest estimate first: a report a user reads from the top. Insertion
 * sort: distinct stacks and sizes are few next to blocks. */
static size_t ranked_buckets(bucket **out, size_t room, int reachable) {
    size_t count = 0;
    FOR_EACH_BUCKET(st, b) {
        size_t k = reachable ? b->reachable : b->leaked;
        if (k == 0 || count == room)
            continue;
        double key = estimated_bytes(b, k);
        size_t at = count++;
        for (; at > 0; at--) {
            bucket *prev = out[at - 1];
            if (estimated_bytes(prev, reachable ? prev->reachable : prev->leaked) >= key)
                break;
            out[at] = prev;
        }
        out[at] = b;
    }
    return count;
}

static void put_entry(hc_fd_out *o, const char *kind, const bucket *b, size_t k) {
    double w = weight(b->size);
    fd_out_put(o, "  ");
    fd_out_put(o, kind);
    fd_out_put(o, ": ~");
    fd_out_put_u(o, (uint64_t)(estimated_bytes(b, k) + 0.5));
    fd_out_put(o, " bytes in ~");
    fd_out_put_u(o, (uint64_t)(k * w + 0.5));
    fd_out_put(o, " blocks of ");
    fd_out_put_u(o, b->size);
    fd_out_put(o, " bytes (");
    fd_out_put_u(o, k);
    fd_out_put(o, " sampled), allocated at:\n");
    for (int i = 0; i < b->stack->depth; i++)
        put_frame(o, b->stack->pcs[i]);
}

/* "~B bytes in ~N blocks", summed over every bucket. */
static void put_total(hc_fd_out *o, int reachable, size_t *samples_out) {
    double blocks = 0, bytes = 0;
    size_t k_total = 0;
    FOR_EACH_BUCKET(st, b) {
        size_t k = reachable ? b->reachable : b->leaked;
        k_total += k;
        blocks += (double)k * weight(b->size);
        bytes += estimated_bytes(b, k);
    }
    fd_out_put(o, "~");
    fd_out_put_u(o, (uint64_t)(bytes + 0.5));
    fd_out_put(o, " bytes in ~");
    fd_out_put_u(o, (uint64_t)(blocks + 0.5));
    fd_out_put(o, " blocks");
    *samples_out = k_total;
}

/* Where the leaks' profile goes: PREFIX.<pid>.leak.heap with
 * HCMALLOC_PROFILE, else $TMPDIR (or /tmp)/hcmalloc.<pid>.leak.heap, as
 * gperftools' heap checker writes its own to /tmp. */
static int leak_profile_path(char *path, size_t size) {
    if (profile_path("leak", path, size) == 0)
        return 0;
    const char *dir = getenv("TMPDIR");
    char prefix[4096];
    hc_fd_out p = {.fd = -1};
    fd_out_to_string(&p, prefix, sizeof prefix);
    fd_out_put(&p, dir != NULL && dir[0] == '/' ? dir : "/tmp");
    fd_out_put(&p, "/hcmalloc");
    fd_out_flush(&p);
    return profile_path_with(prefix, "leak", path, size);
}

/* HCMALLOC_LEAK_CHECK: the live sampled blocks at exit, split by the scan
 * (leak_scan.h) into leaked and reachable; the leaks reported stack by
 * stack, biggest first (level 2: the reachable ones too), and written as a
 * profile for google-pprof. The scan runs under both profile locks (no
 * sample taken, none freed under it: blocks_lock); the report after it,
 * without them (it asks the loader for names, and the loader's lock comes
 * first). */
static void leak_check(int level, const void *stack_from) {
    static leak_roots roots; /* 8 KiB: not on the stack the scan reads */
    leak_collect_roots(&roots);
    hc_lock_acquire(&profile_lock);
    hc_lock_acquire(&blocks_lock);
    size_t n = 0;
    for (const sampled_block *r = live_blocks; r != NULL; r = r->next)
        n++;
    size_t map_bytes = n * (sizeof(leak_block) + sizeof(size_t));
    map_bytes = (map_bytes + os_page_size() - 1) & ~(os_page_size() - 1);
    leak_block *blocks = n > 0 ? os_map(map_bytes) : NULL;
    if (n > 0 && blocks == NULL) {
        hc_lock_release(&blocks_lock);
        hc_lock_release(&profile_lock);
        hc_warn("leak check: no memory for the scan");
        return;
    }
    size_t *work = (size_t *)(blocks + n);
    size_t i = 0;
    for (const sampled_block *r = live_blocks; r != NULL; r = r->next, i++) {
        size_t size = r->bucket->size;
        blocks[i] = (leak_block){.start = r->start, .end = r->start + (size == 0 ? 1 : size), .owner = r->bucket};
    }
    sort_by_address(blocks, n);
    FOR_EACH_BUCKET(st, b) {
        b->leaked = 0;
        b->reachable = 0;
    }
    leak_scan(blocks, n, work, &roots, stack_from);
    for (i = 0; i < n; i++) {
        bucket *b = blocks[i].owner;
        if (blocks[i].reachable)
            b->reachable++;
        else
            b->leaked++;
    }
    size_t total_samples = samples;
    hc_lock_release(&blocks_lock);
    hc_lock_release(&profile_lock);

    hc_fd_out o = {.fd = STDERR_FILENO};
    fd_out_put(&o, "hcmalloc: leak check: ");
    size_t leaked_samples = 0, reachable_samples = 0;
    if (n == 0) {
        fd_out_put(&o, "no sampled block is live at exit (");
        fd_out_put_u(&o, total_samples);
        fd_out_put(&o, " sampled, 1 in ");
        fd_out_put_u(&o, current_sample_bytes());
        fd_out_put(&o, " bytes)\n");
    } else {
        put_total(&o, 0, &leaked_samples);
        fd_out_put(&o, " leaked (");
        fd_out_put_u(&o, leaked_samples);
        fd_out_put(&o, " sampled blocks that nothing reachable points to), ");
        put_total(&o, 1, &reachable_samples);
        fd_out_put(&o, " still reachable (");
        fd_out_put_u(&o, reachable_samples);
        fd_out_put(&o, level >= 2 ? " sampled, listed after the leaks" : " sampled, not listed: HCMALLOC_LEAK_CHECK=2 lists them");
        fd_out_put(&o, "); 1 in ");
        fd_out_put_u(&o, current_sample_bytes());
        fd_out_put(&o, " bytes sampled\n");
        if (roots.truncated)
            fd_out_put(&o, "hcmalloc: leak check: too many loaded objects: some data segments were not scanned\n");
        /* The blocks' memory is done with: it holds the ranking now. */
        bucket **ranked = (bucket **)blocks;
        size_t room = map_bytes / sizeof *ranked;
        size_t count = ranked_buckets(ranked, room, 0);
        for (i = 0; i < count; i++)
            put_entry(&o, "leak", ranked[i], ranked[i]->leaked);
        if (level >= 2) {
            count = ranked_buckets(ranked, room, 1);
            for (i = 0; i < count; i++)
                put_entry(&o, "reachable", ranked[i], ranked[i]->reachable);
        }
    }
    char path[4096];
    if (leaked_samples > 0 && leak_profile_path(path, sizeof path) == 0) {
        write_profile_to(path, 1);
        fd_out_put(&o, "hcmalloc: leak check: every frame with its line: google-pprof --text --lines ");
        fd_out_put(&o, program_path());
        fd_out_put(&o, " ");
        fd_out_put(&o, path);
        fd_out_put(&o, "\n");
    }
    fd_out_finish(&o);
    if (blocks != NULL)
        os_unmap(blocks, map_bytes);
}

/* ---- Start and exit -------------------------------------------------------------- */

static void fork_prepare(void) {
    hc_lock_acquire(&maps_lock);
    hc_lock_acquire(&profile_lock);
    hc_lock_acquire(&blocks_lock);
}
static void fork_release(void) {
    hc_lock_release(&blocks_lock);
    hc_lock_release(&profile_lock);
    hc_lock_release(&maps_lock);
}

static _Unwind_Reason_Code count_frame(struct _Unwind_Context *ctx, void *data) {
    (void)ctx;
    ++*(int *)data;
    return _URC_NO_REASON;
}

__attribute__((constructor)) static void profile_start(void) {
    const hc_options *o = hc_get_options();
    dl_iterate_phdr(find_own_text, (void *)(uintptr_t)&hc_malloc);
    int frames = 0;
    _Unwind_Backtrace(count_frame, &frames); /* priming: binds and warms the unwinder */
    open_libunwind();
    if (cached_backtrace != NULL) {
        void *pcs[4];
        cached_backtrace(pcs, 4); /* priming it too: its first call sets itself up */
    }
    /* The profile locks go through the allocator's own fork handlers
     * (fork.c), first before and last after every allocator lock, as
     * everywhere: so a fork from a signal handler that interrupted a
     * sampled malloc in a single-threaded program takes none of them, as
     * it takes none of the allocator's (glibc's rule), and cannot wait for
     * the lock its own thread holds. */
    hc_fork_register();
    hc_fork_set_outer_locks(fork_prepare, fork_release);
    if (o->profile_prefix != NULL && o->profile_interval_bytes != 0)
        __atomic_store_n(&next_interval_dump, o->profile_interval_bytes, __ATOMIC_RELAXED);
    __atomic_store_n(&unwinder_primed, 1, __ATOMIC_RELEASE);
}

/* noinline: its frame is where the leak check's stack scan starts, above
 * the check's own frames, whose locals hold the blocks' addresses. */
__attribute__((destructor, noinline)) static void profile_at_exit(void) {
    const hc_options *o = hc_get_options();
    if (read_sample_bytes() == 0)
        return;
    if (o->profile_prefix != NULL)
        write_numbered_profile();
    if (o->leak_check)
        leak_check(o->leak_check, __builtin_frame_address(0));
}

void hc_profile_get_stats(hc_profile_stats *out) {
    memset(out, 0, sizeof *out);
    out->sample_bytes = read_sample_bytes();
    hc_lock_acquire(&profile_lock);
    out->samples = samples;
    out->live_samples = __atomic_load_n(&live_samples, __ATOMIC_RELAXED);
    out->dropped = dropped;
    out->profiles_written = __atomic_load_n(&profiles_written, __ATOMIC_RELAXED);
    double est = 0;
    FOR_EACH_BUCKET(st, b)
        est += (double)live_count(b) * weight(b->size) * (double)b->size;
    out->live_estimate = (size_t)(est + 0.5);
    hc_lock_release(&profile_lock);
}

#else /* !HC_SAMPLING: the plain library has no sampler */

int hc_profile_dump(int fd) {
    (void)fd;
    errno = ENOSYS;
    return -1;
}

void hc_profile_get_stats(hc_profile_stats *out) { memset(out, 0, sizeof *out); }

/* The variables a user sets expecting a profile: say they do nothing here. */
__attribute__((constructor)) static void profile_variables_ignored(void) {
    const hc_options *o = hc_get_options();
    if (o->profile_prefix != NULL || o->leak_check)
        hc_warn("HCMALLOC_PROFILE / HCMALLOC_LEAK_CHECK are ignored: this build has no sampler "
                "(use libhcmalloc_profiler.so)");
}

#endif /* HC_SAMPLING */
