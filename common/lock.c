/* common/lock.c — the lock watchdog (see lock.h); empty in an NDEBUG build.
 * Slow path only: a lock is taken once per batch, never on the fast path.
 * Reports with common/fd_out.h: the allocator must not call malloc, even to die. */
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

#include "common/fd_out.h"

/* HC_LOCK_WATCHDOG_SECONDS, or the environment's (lock.h), read once. */
static int lock_watchdog_seconds(void) {
    static int seconds; /* 0: not read yet; a race reads the same value twice */
    int s = __atomic_load_n(&seconds, __ATOMIC_RELAXED);
    if (HC_LIKELY(s != 0))
        return s;
    const char *env = getenv("HC_LOCK_WATCHDOG_SECONDS"); /* getenv allocates nothing */
    s = HC_LOCK_WATCHDOG_SECONDS;
    if (env != NULL && *env != '\0') {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end == '\0' && v >= 1 && v <= 3600)
            s = (int)v;
    }
    __atomic_store_n(&seconds, s, __ATOMIC_RELAXED);
    return s;
}

static long long lock_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* "hcmalloc: lock watchdog: <verb> N s for <what> (0x..) at <where>, held
 * since <file:line> (<hint>)", then abort. */
__attribute__((noreturn, cold)) static void lock_report(const char *verb, hc_lock *lock,
                                                      const char *what, const char *where,
                                                      const char *hint) {
    const char *held_where = __atomic_load_n(&lock->held_where, __ATOMIC_RELAXED);
    hc_fd_out o = HC_FD_OUT_INIT(STDERR_FILENO);
    fd_out_put(&o, "hcmalloc: lock watchdog: ");
    fd_out_put(&o, verb);
    fd_out_put(&o, " ");
    fd_out_put_u(&o, (unsigned)lock_watchdog_seconds());
    fd_out_put(&o, " s for ");
    fd_out_put(&o, what);
    fd_out_put(&o, " (");
    fd_out_put_hex(&o, (uintptr_t)lock);
    fd_out_put(&o, ") at ");
    fd_out_put(&o, where);
    fd_out_put(&o, ", held since ");
    fd_out_put(&o, held_where != NULL ? held_where : "(unknown)");
    fd_out_put(&o, " (");
    fd_out_put(&o, hint);
    fd_out_put(&o, ")\n");
    fd_out_finish(&o);
    abort();
}

void hc_lock_acquire_at(hc_lock *lock, const char *what, const char *where) {
    if (HC_UNLIKELY(hc_lock_fork_owner))
        return; /* every allocator lock is this thread's, for fork (lock.h) */
    if (pthread_mutex_trylock(&lock->mutex) != 0) {
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += lock_watchdog_seconds();
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

int hc_lock_try_at(hc_lock *lock, const char *what, const char *where) {
    if (HC_UNLIKELY(hc_lock_fork_owner))
        return 1; /* already this thread's, for fork: hc_lock_unlock skips it too */
    if (pthread_mutex_trylock(&lock->mutex) != 0)
        return 0;
    __atomic_store_n(&lock->held_what, what, __ATOMIC_RELAXED);
    __atomic_store_n(&lock->held_where, where, __ATOMIC_RELAXED);
    __atomic_store_n(&lock->held_since_ns, lock_now_ns(), __ATOMIC_RELAXED);
    return 1;
}

int hc_lock_try_spinning_at(hc_lock *lock, const char *what, const char *where) {
    for (int i = 0; i < HC_LOCK_SPINS; i++) {
        if (hc_lock_try_at(lock, what, where))
            return 1;
        HC_CPU_RELAX();
    }
    return 0;
}

void hc_lock_acquire_spinning_at(hc_lock *lock, const char *what, const char *where) {
    if (!hc_lock_try_spinning_at(lock, what, where))
        hc_lock_acquire_at(lock, what, where);
}

void hc_lock_unlock_at(hc_lock *lock, const char *what, const char *where) {
    if (HC_UNLIKELY(hc_lock_fork_owner))
        return;
    long long since = __atomic_load_n(&lock->held_since_ns, __ATOMIC_RELAXED);
    if (since != 0 && lock_now_ns() - since > lock_watchdog_seconds() * 1000000000LL)
        lock_report("held over", lock, what, where,
                    "a lock is for a few list operations: no system call or long loop under it");
    __atomic_store_n(&lock->held_since_ns, 0, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&lock->mutex);
}

#endif /* HC_LOCK_WATCHDOG */
