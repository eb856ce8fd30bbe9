/* stage4_reclaim/main_thread_exit_test.c — the main thread's cache is
 * reclaimed when the main thread leaves with pthread_exit.
 *
 * A plain C program, not a googletest one: pthread_exit in the main thread
 * unwinds its stack, and googletest's frames would catch that. main
 * allocates, starts a watcher, and exits its own thread; the watcher waits
 * for main's cache to disappear and sets the process's exit code. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "common/hcmalloc.h"
#include "stage4_reclaim/reclaim.h"

static size_t caches_with_main;

static size_t live_caches(void) {
    tc_budget_stats budget;
    tc_budget_snapshot(&budget);
    return budget.live_caches;
}

static void *watch_main_leave(void *arg) {
    (void)arg;
    for (int i = 0; i < 5000 && live_caches() >= caches_with_main; i++)
        usleep(1000);
    int reclaimed = live_caches() < caches_with_main;
    printf("main thread's cache %s\n", reclaimed ? "reclaimed at pthread_exit" : "NOT reclaimed");
    fflush(stdout);
    _exit(reclaimed ? 0 : 1);
}

int main(void) {
    for (int i = 0; i < 1000; i++)
        hc_free_sized(hc_malloc(48), 48);
    caches_with_main = live_caches();
    pthread_t watcher;
    if (pthread_create(&watcher, NULL, watch_main_leave, NULL) != 0)
        return 2;
    pthread_exit(NULL);
}
