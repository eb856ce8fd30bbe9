/* stage4_reclaim/profile_absent.c — layer 4: the profiler's part of every
 * stage 4 library built without it (:hcmalloc, :hcmalloc_trace): zero
 * counters, and one warning for a user who set its variables. The BUILD file
 * links this or the profiler's files (profile.c), never both; such a
 * library's hc_dump_heap_profile is common/no_heap_profiler.c's.
 * May touch: the options, common/fatal.h (the warning). */
#include <string.h>

#include "common/fatal.h"
#include "stage4_reclaim/options.h"
#include "stage4_reclaim/profile.h"

void hc_profile_get_stats(hc_profile_stats *out) { memset(out, 0, sizeof *out); }

/* The variables a user sets expecting a profile: say they do nothing here. */
__attribute__((constructor)) static void profile_variables_ignored(void) {
    const hc_options *o = hc_get_options();
    if (o->profile_prefix != NULL || o->leak_check)
        hc_warn("HCMALLOC_PROFILE / HCMALLOC_LEAK_CHECK are ignored: this build has no sampler "
                "(use libhcmalloc_profiler.so)");
}

