/* stage4_reclaim/dropin_thread_first_check.c — the recursion trap.
 * Run by dropin_api_test.sh under LD_PRELOAD=libhcmalloc.so.
 *
 * The main thread calls no allocating function: it only starts threads
 * whose very first call is malloc, so each builds its thread cache inside
 * that malloc. Before starting them it creates 40 pthread keys, so any key
 * the allocator creates later has a number above glibc's first 32, and
 * pthread_setspecific for it must calloc a second-level block: the one
 * place where setting up a cache re-enters malloc. (If the library made its
 * key before main, the recursion it guards against does not happen here,
 * but every new thread's setup still does.) A recursion would overflow the
 * stack or deadlock; the alarm turns a deadlock into a failure. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
