/* common/harden.c — the hardened build's key and its cold ends (harden.h).
 * Empty in the default build. Never calls malloc: the key comes from
 * getrandom(2), reports from fatal.c's write(2). */
#define _GNU_SOURCE /* syscall, clock_gettime */
#include "common/harden.h"

#if HC_HARDENED

#include <errno.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/fatal.h"

uintptr_t hc_harden_key;

/* A key whose bits 47..63 are not all zero, so that a link decoded from a
 * raw user-space address (or from 0) always fails harden_decode's check. */
static uintptr_t harden_fresh_key(void) {
    uintptr_t key = 0;
    long got = syscall(SYS_getrandom, &key, sizeof key, 0);
    if (got != (long)sizeof key) {
        /* No getrandom (old kernel, seccomp): weaker, but still per process. */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        key = ((uintptr_t)ts.tv_nsec * 0x9e3779b97f4a7c15u) ^ ((uintptr_t)&ts << 16) ^
              (uintptr_t)getpid() * 0xbf58476d1ce4e5b9u;
    }
    if ((key >> 47) == 0)
        key |= (uintptr_t)1 << 63;
    return key;
}

void harden_init(void) {
    if (HC_LIKELY(__atomic_load_n(&hc_harden_key, __ATOMIC_ACQUIRE) != 0))
        return;
    int saved_errno = errno;
    uintptr_t expected = 0, key = harden_fresh_key();
    /* Two threads may race here: the first key stored wins, and both use it. */
    __atomic_compare_exchange_n(&hc_harden_key, &expected, key, 0, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
    errno = saved_errno;
}

void harden_corrupt_link(const void *slot) {
    hc_fatal_pointer_why("malloc(): corrupted free list at", slot,
                         "a free object's link was overwritten: a write after free or an overflow");
}

/* The tag says free. Program data equal to key ^ slot is a 2^-64 chance;
 * a free object's link also decodes to a valid pointer, which confirms it. */
void harden_free_of_free(const void *slot) {
    uintptr_t t = harden_slot_key(slot);
    uintptr_t next = ((const uintptr_t *)slot)[0] ^ t;
    if ((next & HARDEN_BAD_LINK_BITS) == 0)
        hc_fatal_pointer_why("free(): double free detected of", slot,
                             "the block is already free, or was never handed out");
}

#else
/* Nothing: ISO C wants a translation unit to declare something. */
typedef int harden_unused_in_default_builds;
#endif /* HC_HARDENED */
