/* common/harden.c — the hardened build's key and its cold ends (harden.h).
 * Empty in the default build. Never calls malloc: the key comes from
 * getrandom(2), reports from fatal.c's write(2). */
#define _GNU_SOURCE /* syscall, clock_gettime */
#include "common/harden.h"
#include "common/harden_guard.h"

#if HC_HARDENED

#include <errno.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>


#include "common/fatal.h"

uintptr_t hc_harden_key;
const uintptr_t hc_harden_bad_link_bits = HARDEN_BAD_LINK_BITS;

uintptr_t hc_harden_hand_out_words[2] __attribute__((aligned(16)));

/* A random word: getrandom(2), or a weaker one where it fails. */
static uintptr_t harden_random_word(void) {
    uintptr_t key = 0;
    long got = syscall(SYS_getrandom, &key, sizeof key, 0);
    if (got != (long)sizeof key) {
        /* No getrandom (old kernel, seccomp): weaker, but still per process. */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        key = ((uintptr_t)ts.tv_nsec * 0x9e3779b97f4a7c15u) ^ ((uintptr_t)&ts << 16) ^
              (uintptr_t)getpid() * 0xbf58476d1ce4e5b9u;
    }
    return key;
}

/* A key whose bits 47..63 are not all zero, so that a link decoded from a
 * raw user-space address (or from 0) always fails harden_decode's check. */
static uintptr_t harden_fresh_key(void) {
    uintptr_t key = harden_random_word();
    if ((key >> 47) == 0)
        key |= (uintptr_t)1 << 63;
    return key;
}

uintptr_t harden_canary_of(uintptr_t canary) {
    for (unsigned shift = 0; shift < 64; shift += 8)
        if (((canary >> shift) & 0xff) == 0)
            canary |= (uintptr_t)0xa5 << shift;
    return canary;
}

void harden_init(void) {
    if (HC_LIKELY(__atomic_load_n(&hc_harden_key, __ATOMIC_ACQUIRE) != 0))
        return;
    int saved_errno = errno;
    /* The canary first, then the key: a thread that sees the key (the
     * acquire load above) sees the canary too. Two threads may race here:
     * the first canary and the first key stored win, and both use them. */
    uintptr_t expected = 0, canary = harden_canary_of(harden_random_word());
    __atomic_compare_exchange_n(&hc_harden_hand_out_words[1], &expected, canary, 0,
                                __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    uintptr_t key = harden_fresh_key();
    expected = 0;
    __atomic_compare_exchange_n(&hc_harden_key, &expected, key, 0, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
    errno = saved_errno;
}

void harden_corrupt_link(const void *slot) {
    hc_fatal_pointer_why("malloc(): corrupted free list at", slot,
                         "a free object's link was overwritten: a write after free or an overflow");
}

void harden_corrupt_link_last(const void *slot) { harden_corrupt_link(slot); }

void harden_overflow(const void *slot) {
    hc_fatal_pointer_why("free(): overflow detected past the block at", slot,
                         "its canary, the word after its 8 bytes, was overwritten");
}

void harden_overflow_last(const void *slot) { harden_overflow(slot); }

void harden_free_of_free(const void *slot) {
    hc_fatal_pointer_why("free(): double free detected of", slot,
                         "the block is already free, or was never handed out");
}

/* ---- malloc(0): addresses that fault -------------------------------------------
 * Regions of HARDEN_ZERO_REGION_BYTES mapped PROT_NONE (address space only,
 * no memory), handed out 16 bytes at a time, never reused: a program that
 * calls malloc(0) a million times spends 16 MiB of address space. Once
 * HARDEN_ZERO_REGIONS are used up, malloc(0) fails with ENOMEM. */
#define HARDEN_ZERO_REGION_BYTES ((uintptr_t)64 << 20)
#define HARDEN_ZERO_REGIONS 64

static uintptr_t zero_regions[HARDEN_ZERO_REGIONS]; /* start addresses, 0: none yet */
static uintptr_t zero_next;                         /* next address in the newest region */
static unsigned zero_region_count;
static harden_leaf_lock_t zero_lock = HARDEN_LEAF_LOCK_INITIALIZER; /* slow path: malloc(0) only */
static int zero_lock_held_before_fork;

void *harden_zero_size_alloc(void) {
    void *p = NULL;
    harden_leaf_lock(&zero_lock);
    unsigned n = zero_region_count;
    if (n == 0 || zero_next == zero_regions[n - 1] + HARDEN_ZERO_REGION_BYTES) {
        void *region = n < HARDEN_ZERO_REGIONS
                           ? mmap(NULL, HARDEN_ZERO_REGION_BYTES, PROT_NONE,
                                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
                           : MAP_FAILED;
        if (region == MAP_FAILED) {
            harden_leaf_unlock(&zero_lock);
            errno = ENOMEM;
            return NULL;
        }
        __atomic_store_n(&zero_regions[n], (uintptr_t)region, __ATOMIC_RELEASE);
        __atomic_store_n(&zero_region_count, n + 1, __ATOMIC_RELEASE);
        zero_next = (uintptr_t)region;
    }
    p = (void *)zero_next;
    zero_next += 16;
    harden_leaf_unlock(&zero_lock);
    return p;
}

/* The hardened build's own locks across fork(), after every allocator
 * lock (stage 4's fork.c): neither is held while another lock is taken. */
void harden_fork_lock(void) {
    zero_lock_held_before_fork = harden_leaf_fork_lock(&zero_lock);
    harden_guard_fork_lock();
}

void harden_fork_unlock(int in_child) {
    harden_guard_fork_unlock(in_child);
    harden_leaf_fork_unlock(&zero_lock, zero_lock_held_before_fork, in_child);
}

/* Lock-free: regions are only added, each published before the count. */
int harden_is_zero_size(const void *p) {
    unsigned n = __atomic_load_n(&zero_region_count, __ATOMIC_ACQUIRE);
    for (unsigned i = 0; i < n; i++) {
        uintptr_t start = __atomic_load_n(&zero_regions[i], __ATOMIC_ACQUIRE);
        if ((uintptr_t)p - start < HARDEN_ZERO_REGION_BYTES)
            return 1;
    }
    return 0;
}

#else
/* Nothing: ISO C wants a translation unit to declare something. */
typedef int harden_unused_in_default_builds;
#endif /* HC_HARDENED */
