/* stage4_reclaim/profile_stack.c — layer 4, the heap profiler: the call
 * stack of a sampled allocation.
 *
 * From the .eh_frame tables every x86-64 object carries, so programs built
 * without frame pointers get whole stacks too (a frame-pointer walk would
 * stop, or wander, at the first frame compiled without one: most of libc,
 * and all -O2 code by default). libunwind's unw_backtrace when libunwind8
 * is installed (it caches what it read per code address: about ten times
 * fewer instructions per sample), else libgcc's _Unwind_Backtrace
 * (HCMALLOC_PROFILE_UNWINDER=libgcc forces it). Frames inside this library
 * are skipped (found by address: the library's executable segment, looked
 * up at load), so a stack starts at the caller of malloc or operator new.
 * May touch: libgcc's unwinder, libunwind (dlopen'd at load), the loader's
 * dl_iterate_phdr (at load). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unwind.h>

#include "common/hcmalloc.h"
#include "stage4_reclaim/profile_internal.h"

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

void profile_take_stack(stack_walk *w) {
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
#if HC_TSAN /* common/compiler.h */
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

static _Unwind_Reason_Code count_frame(struct _Unwind_Context *ctx, void *data) {
    (void)ctx;
    ++*(int *)data;
    return _URC_NO_REASON;
}

/* Neither unwinder allocates, but a first call may bind PLT entries and set
 * caches up: so both are called once here, at load, before the program's
 * first sampled malloc. */
void profile_prime_unwinders(void) {
    dl_iterate_phdr(find_own_text, (void *)(uintptr_t)&hc_malloc);
    int frames = 0;
    _Unwind_Backtrace(count_frame, &frames); /* binds and warms libgcc's unwinder */
    open_libunwind();
    if (cached_backtrace != NULL) {
        void *pcs[4];
        cached_backtrace(pcs, 4); /* its first call sets itself up */
    }
}
