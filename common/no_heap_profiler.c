/* common/no_heap_profiler.c — hc_dump_heap_profile for every build without
 * the heap profiler: stages 1-3 and stage 4's default and traced libraries.
 * The profiler's own library (stage 4, :hcmalloc_profiler) links
 * stage4_reclaim/profile_writer.c's definition instead; the BUILD file picks
 * which, so no source tests a flag for it.
 * May touch: errno. */
#include <errno.h>

#include "common/compiler.h"
#include "common/hcmalloc.h"

HC_EXPORT int hc_dump_heap_profile(int fd) {
    (void)fd;
    errno = ENOSYS; /* the heap profiler is stage 4's libhcmalloc_profiler.so */
    return -1;
}
