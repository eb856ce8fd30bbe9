/* stage4_reclaim/profile.h — layer 4: the sampling heap profiler, its
 * profiles (google-pprof's legacy text heap format) and the leak check at
 * exit. docs/profiling.md explains the sampling; docs/dropin.md, "Profiling
 * and tuning", the variables.
 *
 * The sampling itself is in the sampling build only (HC_SAMPLING=1,
 * :hcmalloc_profiler and libhcmalloc_profiler.so): stage 3's malloc.c then
 * counts each thread's bytes down and calls the hooks of
 * stage3_pagecache/layer_hooks.h, which profile.c defines. Every other build
 * compiles profile.c with HC_SAMPLING=0: it only warns, once, that the
 * profiler's variables are ignored, and hc_dump_heap_profile fails with
 * ENOSYS.
 *
 * Nothing here calls malloc: records come from common/pool.h, text goes out
 * through common/fd_out.h, the stack is taken with libgcc's unwinder (primed
 * when the library loads; profile.c says why). */
#ifndef HC_PROFILE_H_
#define HC_PROFILE_H_

#include <stddef.h>

/* Frames kept per sampled stack (the deepest are cut). */
#define HC_PROFILE_MAX_DEPTH 32

/* hc_dump_heap_profile's body: the live sampled heap and the cumulative
 * sampled allocations to `fd`. 0, or -1 with errno. */
int hc_profile_dump(int fd);

/* A snapshot of the profiler's own counters, for stats and tests. */
typedef struct hc_profile_stats {
    size_t sample_bytes;      /* mean distance between samples; 0 = not sampling */
    size_t samples;           /* sampled allocations so far */
    size_t live_samples;      /* of which not yet freed */
    size_t live_estimate;     /* estimated bytes those stand for */
    size_t profiles_written;  /* files written (interval, exit) */
    size_t dropped;           /* samples lost: no memory for their record */
} hc_profile_stats;

void hc_profile_get_stats(hc_profile_stats *out);

#endif /* HC_PROFILE_H_ */
