/* common/lock.c — the lock watchdog (see lock.h); empty in an NDEBUG build.
 * Slow path only: a lock is taken once per batch, never on the fast path.
 * Reports with write(2): the allocator must not call malloc, even to die. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, pthread_mutex_timedlock */
#include "common/lock.h"

/* See lock.h: set only between stage 4's fork prepare and parent/child. */
HC_THREAD_LOCAL int hc_lock_fork_owner;

#if HC_LOCK_WATCHDOG

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long lock_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void lock_write(const char *s) {
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = write(STDERR_FILENO, s, n);
        if (w <= 0) return;
        s += w;
        n -= (size_t)w;
    }
}

static void lock_write_number(uintptr_t v, unsigned base) {
    char digits[2 + 2 * sizeof v + 1];
    int i = (int)sizeof digits - 1;
    digits[i] = '\0';
    do {
        digits[--i] = "0123456789abcdef"[v % base];
        v /= base;
    } while (v != 0);
    if (base == 16) {
        digits[--i] = 'x';
        digits[--i] = '0';
    }
    lock_write(digits + i);
}

/* "hcmalloc: lock watchdog: <verb> N s for <what> (0x..) at <where>, held
 * since <file:line> (<hint>)", then abort. */
__attribute__((noreturn, cold)) static void lock_report(const char *verb, hc_lock *lock,
                                                      const char *what, const char *where,
                                                      const char *hint) {
    const char *held_where = __atomic_load_n(&lock->held_where, __ATOMIC_RELAXED);
    lock_write("hcmalloc: lock watchdog: ");
    lock_write(verb);
    lock_write(" ");
    lock_write_number(HC_LOCK_WATCHDOG_SECONDS, 10);
    lock_write(" s for ");
    lock_write(what);
    lock_write(" (");
    lock_write_number((uintptr_t)lock, 16);
    lock_write(") at ");
    lock_write(where);
    lock_write(", held since ");
    lock_write(held_where != NULL ? held_where : "(unknown)");
    lock_write(" (");
    lock_write(hint);
    lock_write(")\n");
    abort();
}

void hc_lock_acquire_at(hc_lock *lock, const char *what, const char *where) {
    if (HC_UNLIKELY(hc_lock_fork_owner))
        return; /* every allocator lock is this thread's, for fork (lock.h) */
    if (pthread_mutex_trylock(&lock->mutex) != 0) {
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += HC_LOCK_WATCHDOG_SECONDS;
        int rc;
        do {
            rc = pthread_mutex_timedlock(&lock->mutex, &deadline);
        } while (rc == EINTR);
        if (rc != 0)
            lock_report("waited", lock, what, where,
                        "a deadlock? a thread that takes a lock it already holds waits forever");
    }
    __atomic_store_n(&lock->held_what, what, __ATOMIC_RELAXED);
    __atomic_store_n(&lock->held_where, where, __ATOMIC_RELAXED);
    __atomic_store_n(&lock->held_since_ns, lock_now_ns(), __ATOMIC_RELAXED);
}

void hc_lock_release_at(hc_lock *lock, const char *what, const char *where) {
    if (HC_UNLIKELY(hc_lock_fork_owner))
        return;
    long long since = __atomic_load_n(&lock->held_since_ns, __ATOMIC_RELAXED);
    if (since != 0 && lock_now_ns() - since > HC_LOCK_WATCHDOG_SECONDS * 1000000000LL)
        lock_report("held over", lock, what, where,
                    "a lock is for a few list operations: no system call or long loop under it");
    __atomic_store_n(&lock->held_since_ns, 0, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&lock->mutex);
}

#endif /* HC_LOCK_WATCHDOG */
