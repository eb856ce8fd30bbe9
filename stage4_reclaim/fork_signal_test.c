/* stage4_reclaim/fork_signal_test.c — fork() from a signal handler that
 * interrupted the allocator (glibc's tst-mallocfork2), made deterministic:
 * the test takes each allocator lock itself, as an interrupted malloc would
 * hold it, then raises the signal whose handler forks.
 *
 * 1. Single-threaded: glibc's rule, no lock is taken for fork, so the fork
 *    returns, the child finishes what the interrupted thread was doing, and
 *    both go on allocating. Before: hc_fork_prepare waited for the lock
 *    forever (the watchdog of the test build stops it after 10 s).
 * 2. Multi-threaded, a fork nested in a fork (the handler runs between this
 *    thread's prepare and parent handlers): the nested fork takes nothing,
 *    and leaves the outer fork's locks held until the outer parent handler.
 *
 * Plain C with its own main: it must start single-threaded (a framework may
 * start threads), and case 2 creates its first thread only after case 1. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/single_threaded.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/hcmalloc.h"
#include "common/lock.h"
#include "common/size_class.h"
#include "stage2_centralcache/central_cache.h"
#include "stage3_pagecache/page_cache.h"
#include "stage4_reclaim/reclaim.h"
#include "tests/check.h"


static volatile pid_t forked_pid = -1;

static void fork_in_handler(int sig) {
    (void)sig;
    int saved = errno;
    forked_pid = fork();
    errno = saved;
}

/* Some allocation work of every kind: both processes must manage it. */
static int allocate_a_little(void) {
    void *p[64];
    for (int i = 0; i < 64; i++)
        if ((p[i] = hc_malloc((size_t)(16 << (i % 12)))) == NULL) return 0;
    for (int i = 0; i < 64; i++) hc_free(p[i]);
    hc_thread_flush();
    return 1;
}

/* In the child: exits with the verdict. In the parent: the child's. */
static int finish_fork(const char *what) {
    if (forked_pid == 0)
        _exit(allocate_a_little() ? 0 : 3);
    CHECK(forked_pid > 0, "%s: fork failed: %s", what, strerror(errno));
    if (forked_pid <= 0) return 0;
    int status = 0;
    waitpid(forked_pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: the child ended with status %#x", what,
          status);
    CHECK(allocate_a_little(), "%s: the parent cannot allocate", what);
    return 1;
}

typedef struct held_lock {
    const char *name;
    void (*take)(unsigned);
    void (*drop)(unsigned);
    unsigned count; /* instances (bucket locks: one per class) */
} held_lock;

static void take_tc(unsigned i) { (void)i; tc_fork_lock(); }
static void drop_tc(unsigned i) { (void)i; tc_fork_unlock(); }
static void take_bucket(unsigned cls) { hc_lock_acquire(cc_bucket_lock(cls)); }
static void drop_bucket(unsigned cls) { hc_lock_unlock(cc_bucket_lock(cls)); }
static void take_pc(unsigned i) { (void)i; pc_lock_all(); }
static void drop_pc(unsigned i) { (void)i; pc_unlock_all(); }

static const held_lock kLocks[] = {
    {"the thread-cache registry and record pool", take_tc, drop_tc, 1},
    {"a central bucket lock", take_bucket, drop_bucket, HC_NUM_CLASSES},
    {"the page cache lock and span-record pools", take_pc, drop_pc, 1},
};

/* Case 1: the signal lands while this (only) thread holds each lock. */
static void fork_from_handler_single_threaded(void) {
    CHECK(__libc_single_threaded, "the test must start single-threaded");
    for (size_t l = 0; l < sizeof kLocks / sizeof kLocks[0]; l++) {
        for (unsigned i = 0; i < kLocks[l].count; i++) {
            forked_pid = -1;
            kLocks[l].take(i);
            raise(SIGUSR1); /* the handler forks, with the lock held */
            kLocks[l].drop(i); /* what the interrupted malloc does next, in both */
            if (!finish_fork(kLocks[l].name)) return;
        }
    }
}

static void *nothing(void *arg) { return arg; }

static void *try_bucket_lock(void *arg) {
    int rc = pthread_mutex_trylock(&cc_bucket_lock(*(unsigned *)arg)->mutex);
    if (rc == 0) pthread_mutex_unlock(&cc_bucket_lock(*(unsigned *)arg)->mutex);
    return (void *)(long)rc;
}

/* Another thread's view: is the bucket lock of `cls` held? */
static int bucket_lock_is_held(unsigned cls) {
    pthread_t t;
    void *rc;
    pthread_create(&t, NULL, try_bucket_lock, &cls);
    pthread_join(t, &rc);
    return (long)rc == EBUSY;
}

/* Case 2: a fork inside a fork's window, in a process with threads. */
static void fork_nested_in_a_fork(void) {
    pthread_t t;
    pthread_create(&t, NULL, nothing, NULL);
    pthread_join(t, NULL);
    CHECK(!__libc_single_threaded, "a thread has run: the process counts as multi-threaded");
    hc_malloc(32); /* registers the fork handlers */
    forked_pid = -1;
    hc_fork_prepare(); /* as fork() does before it copies the process */
    raise(SIGUSR1);    /* the handler forks in the middle */
    if (forked_pid == 0) {
        /* The nested child: the outer fork's locks are this thread's. */
        hc_fork_parent();
        _exit(allocate_a_little() ? 0 : 3);
    }
    CHECK(bucket_lock_is_held(1), "the nested fork unlocked the outer fork's locks");
    hc_fork_parent();
    CHECK(!bucket_lock_is_held(1), "the outer parent handler left a lock held");
    finish_fork("a fork nested in a fork");
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fork_in_handler;
    sigaction(SIGUSR1, &sa, NULL);
    CHECK(allocate_a_little(), "allocation before the test");
    fork_from_handler_single_threaded();
    fork_nested_in_a_fork();
    if (failures != 0) {
        fprintf(stderr, "fork_signal_test: %d failures\n", failures);
        return 1;
    }
    printf("fork_signal_test: PASS\n");
    return 0;
}
