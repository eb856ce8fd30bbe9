/* common/harden_leaf_lock.c — the hardened build's leaf locks
 * (harden_guard.h): a lock word that names its holder, so that a fork, and
 * a signal handler that calls back into the allocator, can ask whether
 * this very thread holds it. Used by the guarded blocks' table
 * (harden_guard.c) and malloc(0)'s regions (harden.c). Empty in the
 * default build. */
#define _GNU_SOURCE /* syscall */
#include "common/harden_guard.h"

#if HC_HARDENED

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/lock.h"

#define LEAF_WAITERS (1u << 31)

/* This thread's id in a leaf lock's word: a count, not the kernel's thread
 * id, which changes in a fork's child and comes back for later threads.
 * The child's one thread keeps its id, and its later threads count on. */
static HC_THREAD_LOCAL unsigned leaf_thread_id;
static unsigned leaf_ids_given;

static unsigned leaf_id(void) {
    unsigned id = leaf_thread_id;
    while (HC_UNLIKELY(id == 0)) /* first use; 0 again after 2^31 threads */
        id = (__atomic_add_fetch(&leaf_ids_given, 1, __ATOMIC_RELAXED)) & ~LEAF_WAITERS;
    leaf_thread_id = id;
    return id;
}

static void leaf_take(harden_leaf_lock_t *lock) {
    unsigned me = leaf_id(), seen = 0;
    if (__atomic_compare_exchange_n(&lock->word, &seen, me, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return;
    for (;;) {
        /* Taken from a queue: others may still wait, so the bit stays. */
        if (seen == 0) {
            if (__atomic_compare_exchange_n(&lock->word, &seen, me | LEAF_WAITERS, 0,
                                            __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
                return;
            continue;
        }
        if ((seen & LEAF_WAITERS) == 0 &&
            !__atomic_compare_exchange_n(&lock->word, &seen, seen | LEAF_WAITERS, 0,
                                         __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            continue;
        syscall(SYS_futex, &lock->word, FUTEX_WAIT_PRIVATE, seen | LEAF_WAITERS, NULL, NULL, 0);
        seen = __atomic_load_n(&lock->word, __ATOMIC_RELAXED);
    }
}

/* One atomic exchange lets go: no moment where the word names this thread
 * but the lock is free, or the reverse. */
static void leaf_give(harden_leaf_lock_t *lock) {
    if (__atomic_exchange_n(&lock->word, 0, __ATOMIC_RELEASE) & LEAF_WAITERS)
        syscall(SYS_futex, &lock->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

int harden_leaf_reentered(const harden_leaf_lock_t *lock) {
    return !hc_lock_fork_owner && (__atomic_load_n(&lock->word, __ATOMIC_RELAXED) & ~LEAF_WAITERS) == leaf_id();
}

void harden_leaf_lock(harden_leaf_lock_t *lock) {
    if (!hc_lock_fork_owner)
        leaf_take(lock);
}

void harden_leaf_unlock(harden_leaf_lock_t *lock) {
    if (!hc_lock_fork_owner)
        leaf_give(lock);
}

int harden_leaf_fork_lock(harden_leaf_lock_t *lock) {
    if ((__atomic_load_n(&lock->word, __ATOMIC_RELAXED) & ~LEAF_WAITERS) == leaf_id())
        return 1; /* this thread's, in the section the signal interrupted */
    leaf_take(lock);
    return 0;
}

void harden_leaf_fork_unlock(harden_leaf_lock_t *lock, int held_before, int in_child) {
    if (in_child) /* nobody waits in the child: its one thread's, or free */
        __atomic_store_n(&lock->word, held_before ? leaf_id() : 0, __ATOMIC_RELAXED);
    else if (!held_before)
        leaf_give(lock);
}

#else
/* Nothing: ISO C wants a translation unit to declare something. */
typedef int harden_leaf_lock_unused_in_default_builds;
#endif /* HC_HARDENED */
