/* stage4_reclaim/checks/dropin_thread_first_check.c — the recursion trap.
 * Run by dropin_run_checks.sh (:dropin_api_test) under LD_PRELOAD=libhcmalloc.so.
 *
 * Built twice: preloaded (dropin_api_test), and linked with dropin.c and
 * the allocator into the executable itself (HC_LINKED_IN, its own test).
 *
 * The main thread calls no allocating function: it only starts threads
 * whose very first call is malloc, so each builds its thread cache inside
 * that malloc. Before starting them it creates 40 pthread keys, so a key
 * the allocator creates later has a number above glibc's first 32, and
 * pthread_setspecific for it must calloc a second-level block: the one
 * place where setting up a cache re-enters malloc.
 * Preloaded, libstdc++'s start-up (a dependency of the library) has already
 * called malloc on the main thread, so the allocator's key exists before
 * main and only the per-thread setup is exercised. Linked in (and without
 * libstdc++), nothing allocates before main -- the program checks that the
 * allocator has mapped nothing yet. The first allocation is then glibc's
 * calloc of the new thread's TLS vector inside pthread_create, after the 40
 * keys: that cache's pthread_setspecific callocs again, the re-entrant path
 * (seen in gdb: calloc > tc_get_or_create > tc_layer_cache_created >
 * pthread_setspecific > calloc).
 * A recursion would overflow the stack or deadlock; the alarm turns a
 * deadlock into a failure. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef HC_LINKED_IN
#include "common/hcmalloc.h"
#endif

#define THREADS 16

static void *first_malloc(void *arg) {
    (void)arg;
    void *p = malloc(24); /* this thread's first allocation */
    if (p == NULL)
        return (void *)1;
    memset(p, 7, 24);
    free(p);
    for (int i = 0; i < 2000; i++)
        free(malloc((size_t)i % 700 + 1));
    return NULL;
}

static void say(const char *s) {
    ssize_t rc = write(STDOUT_FILENO, s, strlen(s));
    (void)rc;
}

int main(void) {
    alarm(30);
    pthread_key_t keys[40];
    for (int i = 0; i < 40; i++)
        if (pthread_key_create(&keys[i], NULL) != 0)
            return 2;
#ifdef HC_LINKED_IN
    hc_stats stats;
    hc_get_stats(&stats);
    if (stats.os_mapped_bytes != 0) {
        say("dropin_thread_first_check: FAIL (something allocated before main)\n");
        return 1;
    }
#endif
    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&threads[i], NULL, first_malloc, NULL) != 0)
            return 3;
    for (int i = 0; i < THREADS; i++) {
        void *result;
        pthread_join(threads[i], &result);
        if (result != NULL) {
            say("dropin_thread_first_check: FAIL (malloc returned NULL)\n");
            return 1;
        }
    }
    say("dropin_thread_first_check: PASS (16 threads whose first call is malloc)\n");
    return 0;
}
