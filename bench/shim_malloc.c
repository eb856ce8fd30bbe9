/* bench/shim_malloc.c — bench/alloc_shim.h through malloc / free: glibc's,
 * or a peer's or stage 4's drop-in when the runner sets LD_PRELOAD.
 * hcmalloc's extras (stats, heap maps) are found with dlsym, so the same
 * binary measures every malloc library.
 * May touch: libc (malloc, free, realloc, dladdr, dlsym). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "bench/alloc_shim.h"

void *bench_malloc(size_t size) { return malloc(size); }

void bench_free(void *ptr, size_t size) {
    (void)size;
    free(ptr);
}

void *bench_realloc(void *ptr, size_t size) { return realloc(ptr, size); }

int bench_has_realloc(void) { return 1; }

/* The library malloc resolves to: libc, or the one LD_PRELOAD put first. */
const char *bench_allocator_name(void) {
    Dl_info info;
    void *(*resolved)(size_t) = malloc;
    void *address;
    memcpy(&address, &resolved, sizeof address); /* ISO C has no function-to-object cast */
    if (dladdr(address, &info) != 0 && info.dli_fname != NULL)
        return info.dli_fname;
    return "malloc";
}

int bench_allocator_stats(hc_stats *out) {
    void (*get_stats)(hc_stats *);
    void *symbol = dlsym(RTLD_DEFAULT, "hc_get_stats");
    if (symbol == NULL)
        return 0;
    memcpy(&get_stats, &symbol, sizeof get_stats);
    get_stats(out);
    return 1;
}

bench_heap_svg_fn bench_heap_svg_writer(void) {
    bench_heap_svg_fn dump = NULL;
    void *symbol = dlsym(RTLD_DEFAULT, "hc_dump_heap_svg");
    if (symbol != NULL)
        memcpy(&dump, &symbol, sizeof dump);
    return dump;
}
