/* stage4_reclaim/profile_sampler.c — layer 4, the heap profiler: when to
 * sample, and what a sample stands for.
 *
 * Each thread's bytes are a Poisson process of rate 1/T, T =
 * HCMALLOC_PROFILE_SAMPLE_BYTES: the distance to the next sample point is
 * drawn from an exponential distribution of mean T, and an allocation is
 * sampled when a point falls in its bytes, with probability
 * p(s) = 1 - exp(-s/T) whatever came before (the distribution has no
 * memory). So a sampled block of s bytes stands for s / p(s) bytes and
 * 1 / p(s) blocks, an unbiased estimate for every size (docs/profiling.md
 * has the proof and the error). T = 1 samples every allocation: exact, and
 * slow. hc_malloc counts the bytes down inline (profile_hooks.h); this file
 * runs when the count goes below zero, and triggers the interval profiles.
 * No libm: the two functions it needs are here, for the values they get.
 * May touch: the options, the thread's hook word (tc_self.layer_word),
 * profile_writer.c (an interval's profile). */
#define _GNU_SOURCE
#include <stdint.h>
#include <time.h>

#include "common/compiler.h"
#include "stage1_threadcache/thread_cache.h"
#include "stage4_reclaim/options.h"
#include "stage4_reclaim/profile_hooks.h"
#include "stage4_reclaim/profile_internal.h"

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

/* The countdown is the thread's hook word (profile_hooks.h). It starts at 0:
 * the thread's first call arms it. */
#define sample_countdown (tc_self.layer_word)

static HC_THREAD_LOCAL intptr_t armed_distance; /* the countdown's value when armed */
static HC_THREAD_LOCAL uint64_t rng_state;

static size_t sample_bytes;     /* T; 0: off. From the options, at the first sample point */

/* Every thread stores the same value (the option), so a relaxed store is
 * enough: it only keeps those stores from being a data race. */
size_t profile_sample_bytes(void) { return __atomic_load_n(&sample_bytes, __ATOMIC_RELAXED); }

size_t profile_read_sample_bytes(void) {
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
    if (profile_sample_bytes() == 1)
        return 0; /* every allocation (exact mode) */
    if (rng_state == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        rng_state = (uint64_t)ts.tv_nsec ^ ((uint64_t)(uintptr_t)&rng_state << 16) ^
                    (__atomic_add_fetch(&seed_counter, 1, __ATOMIC_RELAXED) << 40);
    }
    double u = (double)((splitmix(&rng_state) >> 11) + 1) / 9007199254740992.0; /* (0, 1] */
    double d = -log_of(u) * (double)profile_sample_bytes();
    if (d < 1)
        return 1; /* 0 marks a thread not yet armed */
    return d >= (double)(INTPTR_MAX / 2) ? INTPTR_MAX / 2 : (intptr_t)d;
}

void profile_arm_intervals(uint64_t interval_bytes) {
    __atomic_store_n(&next_interval_dump, interval_bytes, __ATOMIC_RELAXED);
}

int hc_profile_sample_due(size_t size) {
    /* Read here, not in the constructor: the loader's mallocs come first. */
    profile_read_sample_bytes();
    if (profile_sample_bytes() == 0) {
        sample_countdown = INTPTR_MAX; /* off: out of reach (2^63 bytes) */
        return 0;
    }
    int first = armed_distance == 0 && profile_sample_bytes() != 1;
    /* The bytes this thread counted down since it was last armed. */
    uint64_t counted = (uint64_t)(armed_distance - sample_countdown);
    uint64_t total = __atomic_add_fetch(&allocated_bytes, counted, __ATOMIC_RELAXED);
    armed_distance = draw_distance();
    sample_countdown = armed_distance;
    if (first) {
        /* The thread's first request: its stream starts here; the request
         * is sampled if the first point falls in it. */
        sample_countdown -= (intptr_t)size;
        if (sample_countdown >= 0)
            return 0;
        armed_distance = draw_distance();
        sample_countdown = armed_distance;
    }
    uint64_t due = __atomic_load_n(&next_interval_dump, __ATOMIC_RELAXED);
    if (due != 0 && total >= due &&
        __atomic_compare_exchange_n(&next_interval_dump, &due,
                                    due + hc_get_options()->profile_interval_bytes, 0,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        profile_dump_interval();
    return 1;
}

/* ---- Estimates ------------------------------------------------------------------- */

/* 1 / p(size) (profile_internal.h). */
double profile_weight(size_t size) {
    if (profile_sample_bytes() <= 1)
        return 1;
    return 1 / one_minus_exp_neg((double)(size == 0 ? 1 : size) / (double)profile_sample_bytes());
}
