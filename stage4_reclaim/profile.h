/* stage4_reclaim/profile.h — layer 4: the sampling heap profiler, its
 * profiles (google-pprof's legacy text heap format) and the leak check at
 * exit. docs/profiling.md explains the sampling; docs/dropin.md, "Profiling
 * and tuning", the variables.
 *
 * The profiler is in its own library only (:hcmalloc_profiler and
 * libhcmalloc_profiler.so): its BUILD stanza forces profile_hooks.h, the
 * profiler's definitions of stage 3's block hooks, into stage 3's
 * malloc.c, which then counts each thread's bytes down, and links the
 * profiler's files (profile_internal.h lists them). Every other stage 4
 * library links profile_absent.c instead: it only warns, once, that the
 * profiler's variables are ignored, and its hc_dump_heap_profile
 * (common/no_heap_profiler.c) fails with ENOSYS.
 *
 * Nothing here calls malloc: records come from common/pool.h, text goes out
 * through common/fd_out.h, the stack is taken with an unwinder primed when
 * the library loads (profile_stack.c says why). */
#ifndef HC_PROFILE_H_
#define HC_PROFILE_H_

#include <stddef.h>

/* Frames kept per sampled stack (the deepest are cut). */
#define HC_PROFILE_MAX_DEPTH 32

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
