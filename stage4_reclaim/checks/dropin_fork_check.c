/* stage4_reclaim/checks/dropin_fork_check.c — fork while other threads allocate.
 * Run by dropin_fork_test.sh under LD_PRELOAD=libhcmalloc.so.
 *
 * Three threads malloc and free without pause (yielding now and then, so
 * the forking thread gets the CPU on a two-core machine); the main thread forks
 * FORK_ROUNDS times. Each child allocates (small, large, aligned, from a
 * new thread of its own) and exits through exit(), so destructors run too.
 * Without the atfork handlers a child would inherit a lock some parent
 * thread held at the moment of fork, and hang on its first malloc: the
 * child's alarm turns that hang into a failure instead of a stuck test. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define FORK_ROUNDS 200
#define WORKERS 3

static atomic_int stop;

static void *churn(void *arg) {
    unsigned seed = (unsigned)(uintptr_t)arg;
    void *held[64] = {0};
    for (unsigned long op = 1; !atomic_load_explicit(&stop, memory_order_relaxed); op++) {
        if (op % 1024 == 0)
            sched_yield();
        seed = seed * 1103515245u + 12345u;
        unsigned slot = (seed >> 8) % 64;
        free(held[slot]);
        /* Mostly small, sometimes large: every tier's lock gets taken. */
        size_t size = (seed >> 16) % 16 == 0 ? 300000 + (seed >> 20) % 200000 : 1 + (seed >> 16) % 2000;
        held[slot] = malloc(size);
        if (held[slot] != NULL)
            memset(held[slot], 0x11, size < 64 ? size : 64);
    }
    for (int i = 0; i < 64; i++)
        free(held[i]);
    return NULL;
}

static void *child_thread(void *arg) {
    (void)arg;
    for (int i = 0; i < 1000; i++)
        free(malloc((size_t)i * 13 + 1));
    return NULL;
}

static int child_main(void) {
    alarm(20); /* a deadlocked child dies with SIGALRM */
    void *blocks[500];
    for (int i = 0; i < 500; i++) {
        blocks[i] = malloc((size_t)(i * 97 % 5000) + 1);
        if (blocks[i] == NULL)
            return 2;
    }
    void *big = malloc(1 << 20);
    void *aligned = aligned_alloc(4096, 10000);
    if (big == NULL || aligned == NULL)
        return 3;
    memset(big, 1, 1 << 20);
    pthread_t t;
    if (pthread_create(&t, NULL, child_thread, NULL) != 0)
        return 4;
    pthread_join(t, NULL);
    for (int i = 0; i < 500; i++)
        free(blocks[i]);
    free(big);
    free(aligned);
    return 0;
}

int main(void) {
    pthread_t workers[WORKERS];
    for (int i = 0; i < WORKERS; i++)
        if (pthread_create(&workers[i], NULL, churn, (void *)(uintptr_t)(i + 1)) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            return 1;
        }
    int failed = 0;
    for (int round = 0; round < FORK_ROUNDS; round++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            failed++;
            break;
        }
        if (pid == 0)
            exit(child_main());
        int status;
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "round %d: child %s %d\n", round,
                    WIFSIGNALED(status) ? "killed by signal" : "exited with",
                    WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
            failed++;
        }
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < WORKERS; i++)
        pthread_join(workers[i], NULL);
    if (failed != 0) {
        fprintf(stderr, "dropin_fork_check: %d of %d children failed\n", failed, FORK_ROUNDS);
        return 1;
    }
    printf("dropin_fork_check: PASS (%d forks while %d threads allocate)\n", FORK_ROUNDS, WORKERS);
    return 0;
}
