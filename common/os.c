/* common/os.c — mmap, mremap, munmap and madvise, with failure reported and counted. */
#define _GNU_SOURCE
#include "common/os.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/track.h"

static atomic_size_t os_mapped;
static atomic_uint os_fail_count;
static atomic_uint os_fail_one_in;
static atomic_uint os_fail_seed;
static atomic_ulong os_injected;
static void (*_Atomic os_map_observer)(size_t);
static void (*_Atomic os_populate_observer)(void *, size_t);
static atomic_int os_populate_unsupported;

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older headers lack it */
#endif

size_t os_page_size(void) {
    static size_t page; /* a benign race: every thread computes the same value */
    size_t p = __atomic_load_n(&page, __ATOMIC_RELAXED);
    if (p == 0) {
        p = (size_t)sysconf(_SC_PAGESIZE);
        __atomic_store_n(&page, p, __ATOMIC_RELAXED);
    }
    return p;
}

/* Decides whether a fault-injection hook refuses this mapping. */
static int os_injected_failure(void) {
    unsigned n = atomic_load_explicit(&os_fail_count, memory_order_relaxed);
    while (n > 0) {
        if (atomic_compare_exchange_weak(&os_fail_count, &n, n - 1)) {
            atomic_fetch_add(&os_injected, 1);
            return 1;
        }
    }
    unsigned one_in = atomic_load_explicit(&os_fail_one_in, memory_order_relaxed);
    if (one_in != 0) {
        /* A shared LCG: the exact sequence across threads does not matter. */
        unsigned x = atomic_fetch_add(&os_fail_seed, 0x9E3779B9u) * 2654435761u;
        if ((x >> 16) % one_in == 0) {
            atomic_fetch_add(&os_injected, 1);
            return 1;
        }
    }
    return 0;
}

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000 /* Linux 4.17; older headers lack the name */
#endif

/* Every mapping: the observer hears of it, an injected failure refuses it,
 * and what the kernel maps is counted. `flags` beside MAP_PRIVATE |
 * MAP_ANONYMOUS; NULL with errno = ENOMEM on failure. */
static void *os_map_with(void *addr, size_t bytes, int flags) {
    void (*observer)(size_t) = atomic_load_explicit(&os_map_observer, memory_order_acquire);
    if (observer != NULL)
        observer(bytes);
    if (os_injected_failure()) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = mmap(addr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
    if (p == MAP_FAILED) {
        errno = ENOMEM; /* mmap may say EINVAL for absurd sizes; malloc says ENOMEM */
        return NULL;
    }
    atomic_fetch_add(&os_mapped, bytes);
    return p;
}

void *os_map(size_t bytes) { return os_map_with(NULL, bytes, 0); }

void *os_map_at(void *addr, size_t bytes) {
    void *p = os_map_with(addr, bytes, MAP_FIXED_NOREPLACE);
    if (p != NULL && p != addr) { /* a kernel older than the flag took it as a hint */
        os_unmap(p, bytes);
        errno = ENOMEM;
        return NULL;
    }
    return p;
}

void *os_map_aligned(size_t bytes, size_t alignment) {
    if (alignment <= os_page_size())
        return os_map(bytes);
    if (bytes + alignment < bytes) {
        errno = ENOMEM;
        return NULL;
    }
    char *raw = os_map(bytes + alignment);
    if (raw == NULL)
        return NULL;
    char *start = (char *)(((uintptr_t)raw + alignment - 1) & ~(uintptr_t)(alignment - 1));
    size_t head = (size_t)(start - raw);
    size_t tail = alignment - head;
    if (head) os_unmap(raw, head);
    if (tail) os_unmap(start + bytes, tail);
    return start;
}

/* Both run under free(), which must not change errno (POSIX.1-2024): a
 * failure is reported by the result alone, and errno is put back. */
void os_unmap(void *addr, size_t bytes) {
    int saved_errno = errno;
    /* Whatever a checker was told about these pages ends with them: a later
     * mapping at the same address must not inherit ASan's poison. */
    track_internal_begin(addr, bytes);
    if (munmap(addr, bytes) == 0)
        atomic_fetch_sub(&os_mapped, bytes);
    errno = saved_errno;
}

int os_grow_in_place(void *addr, size_t bytes, size_t new_bytes) {
    void (*observer)(size_t) = atomic_load_explicit(&os_map_observer, memory_order_acquire);
    if (observer != NULL)
        observer(new_bytes - bytes);
    if (os_injected_failure())
        return -1;
    int saved_errno = errno;
    void *p = mremap(addr, bytes, new_bytes, 0);
    errno = saved_errno;
    if (p == MAP_FAILED)
        return -1;
    atomic_fetch_add(&os_mapped, new_bytes - bytes);
    return 0;
}

int os_move_mapping(void *addr, size_t bytes, void *dest, size_t new_bytes) {
    int saved_errno = errno;
    /* As os_unmap: a checker's view of the old range ends with it. */
    track_internal_begin(addr, bytes);
    void *p = mremap(addr, bytes, new_bytes, MREMAP_MAYMOVE | MREMAP_FIXED, dest);
    errno = saved_errno;
    if (p == MAP_FAILED)
        return -1;
    atomic_fetch_sub(&os_mapped, bytes); /* dest's bytes were counted when os_map made it */
    return 0;
}

int os_release(void *addr, size_t bytes) {
    int saved_errno = errno;
    int result = madvise(addr, bytes, MADV_DONTNEED);
    errno = saved_errno;
    return result;
}

void os_advise_huge(void *addr, size_t bytes) {
    int saved_errno = errno;
    (void)madvise(addr, bytes, MADV_HUGEPAGE); /* EINVAL: a kernel without huge pages */
    errno = saved_errno;
}

void os_populate(void *addr, size_t bytes) {
    void (*observer)(void *, size_t) = atomic_load_explicit(&os_populate_observer, memory_order_acquire);
    if (observer)
        observer(addr, bytes);
    if (atomic_load_explicit(&os_populate_unsupported, memory_order_relaxed))
        return;
    int saved_errno = errno;
    /* EINVAL: an advice this kernel does not know (our ranges are aligned
     * and mapped); any other failure leaves the pages to fault in. */
    if (madvise(addr, bytes, MADV_POPULATE_WRITE) != 0 && errno == EINVAL)
        atomic_store_explicit(&os_populate_unsupported, 1, memory_order_relaxed);
    errno = saved_errno;
}

void os_back_before_writes(void *first, size_t length, size_t stride) {
    const uintptr_t page = os_page_size();
    if (stride > page)
        return;
    uintptr_t from = (uintptr_t)first & ~(page - 1);
    uintptr_t to = ((uintptr_t)first + length + page) & ~(page - 1); /* past the last write's page */
    if (to - from >= 2 * page)
        os_populate((void *)from, to - from);
}

size_t os_mapped_bytes(void) { return atomic_load(&os_mapped); }

void os_fail_next_maps(unsigned n) { atomic_store(&os_fail_count, n); }

void os_fail_maps_randomly(unsigned one_in, unsigned seed) {
    atomic_store(&os_fail_seed, seed);
    atomic_store(&os_fail_one_in, one_in);
}

unsigned long os_injected_failures(void) { return atomic_load(&os_injected); }

void os_set_map_observer(void (*observer)(size_t bytes)) {
    atomic_store_explicit(&os_map_observer, observer, memory_order_release);
}

void os_set_populate_observer(void (*observer)(void *addr, size_t bytes)) {
    atomic_store_explicit(&os_populate_observer, observer, memory_order_release);
}
