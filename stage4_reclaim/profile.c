/* stage4_reclaim/profile.c — layer 4: the sampling heap profiler's start,
 * exit and fork wiring, and its counters (profile.h). The profiler's other
 * files, one concern each, are listed in profile_internal.h; the BUILD file
 * links them into :hcmalloc_profiler alone, with profile_hooks.h forced in
 * (stage 3's block hooks), and profile_absent.c into every other stage 4
 * library.
 *
 * At load, the constructor primes the unwinders (profile_stack.c), puts the
 * profiler's locks under the allocator's fork handlers, and arms the
 * interval profiles; at exit, the destructor writes the exit profile and
 * runs the leak check. Nothing here calls malloc: records come from
 * common/pool.h, text goes out through common/fd_out.h.
 * May touch: the options, fork.c (hc_fork_register,
 * hc_fork_set_outer_locks), the profiler's own files. */
#include <string.h>

#include "common/lock.h"
#include "stage4_reclaim/options.h"
#include "stage4_reclaim/profile.h"
#include "stage4_reclaim/profile_internal.h"
#include "stage4_reclaim/reclaim.h"

static void fork_prepare(void) {
    hc_lock_acquire(&profile_maps_lock);
    hc_lock_acquire(&profile_lock);
    hc_lock_acquire(&profile_blocks_lock);
}
static void fork_unlock(void) {
    hc_lock_unlock(&profile_blocks_lock);
    hc_lock_unlock(&profile_lock);
    hc_lock_unlock(&profile_maps_lock);
}

__attribute__((constructor)) static void profile_start(void) {
    const hc_options *o = hc_get_options();
    profile_prime_unwinders();
    /* The profile locks go through the allocator's own fork handlers
     * (fork.c), first before and last after every allocator lock, as
     * everywhere: so a fork from a signal handler that interrupted a
     * sampled malloc in a single-threaded program takes none of them, as
     * it takes none of the allocator's (glibc's rule), and cannot wait for
     * the lock its own thread holds. */
    hc_fork_register();
    hc_fork_set_outer_locks(fork_prepare, fork_unlock);
    if (o->profile_prefix != NULL && o->profile_interval_bytes != 0)
        profile_arm_intervals(o->profile_interval_bytes);
    __atomic_store_n(&profile_unwinder_primed, 1, __ATOMIC_RELEASE);
}

/* noinline: its frame is where the leak check's stack scan starts, above
 * the check's own frames, whose locals hold the blocks' addresses. */
__attribute__((destructor, noinline)) static void profile_at_exit(void) {
    const hc_options *o = hc_get_options();
    if (profile_read_sample_bytes() == 0)
        return;
    if (o->profile_prefix != NULL)
        profile_write_numbered();
    if (o->leak_check)
        profile_leak_check(o->leak_check, __builtin_frame_address(0));
}

void hc_profile_get_stats(hc_profile_stats *out) {
    memset(out, 0, sizeof *out);
    out->sample_bytes = profile_read_sample_bytes();
    hc_lock_acquire(&profile_lock);
    out->samples = profile_samples;
    out->live_samples = __atomic_load_n(&profile_live_samples, __ATOMIC_RELAXED);
    out->dropped = profile_dropped;
    out->profiles_written = profile_files_written();
    double est = 0;
    FOR_EACH_BUCKET(st, b)
        est += (double)live_count(b) * profile_weight(b->size) * (double)b->size;
    out->live_estimate = (size_t)(est + 0.5);
    hc_lock_unlock(&profile_lock);
}
