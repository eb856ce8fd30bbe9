/* tools/docs/figures/fastpath_loop.c — a loop of hc_malloc + hc_free_sized (or hc_free) pairs,
 * for counting the fast path's instructions under callgrind
 * (tools/measure/count_fastpath.sh). Not part of any allocator layer: it only calls
 * the public API.
 *
 * usage: fastpath_loop PAIRS [SIZE [unsized]]   (SIZE defaults to 32)
 * With "unsized" each pair frees with hc_free(p) instead of
 * hc_free_sized(p, SIZE): stage 3 on, free finds the size in the page map.
 * The first pair takes the slow path (the thread's cache is created and one
 * list refilled); every later pair frees the object the previous malloc
 * returned and gets it straight back, so it is a thread-cache hit both ways.
 * The size is read at run time so that the compiler cannot specialise the
 * calls for it: hc_malloc sees what a caller with a variable size gives it. */
#include <stdlib.h>
#include <string.h>

#include "common/hcmalloc.h"

int main(int argc, char **argv) {
    unsigned long pairs = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000;
    size_t size = argc > 2 ? strtoul(argv[2], NULL, 10) : 32;
    int unsized = argc > 3 && strcmp(argv[3], "unsized") == 0;
    for (unsigned long i = 0; i < pairs; i++) {
        void *p = hc_malloc(size);
        if (p == NULL)
            return 1;
        if (unsized)
            hc_free(p);
        else
            hc_free_sized(p, size);
    }
    return 0;
}
