/* stage4_reclaim/key_failure_test.c — when pthread_key_create fails (every
 * key taken), stage 4 cannot reclaim exiting threads' caches; it must say so
 * on stderr, once, and still allocate. Plain C: the key must fail at the
 * process's first cache creation, before anything else allocates. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/hcmalloc.h"

int main(void) {
    pthread_key_t key;
    while (pthread_key_create(&key, NULL) == 0) {
    }
    int pipe_fds[2];
    if (pipe(pipe_fds) != 0)
        return 2;
    int saved_stderr = dup(STDERR_FILENO);
    dup2(pipe_fds[1], STDERR_FILENO);
    void *p = hc_malloc(64); /* the first cache: the key is created here, and fails */
    hc_free_sized(p, 64);
    p = hc_malloc(64);
    hc_free_sized(p, 64);
    dup2(saved_stderr, STDERR_FILENO);
    close(pipe_fds[1]);
    char said[512] = {0};
    ssize_t n = read(pipe_fds[0], said, sizeof said - 1);
    (void)n;
    int ok = p != NULL && strstr(said, "hcmalloc: pthread_key_create failed") != NULL &&
             strstr(strstr(said, "failed") + 1, "pthread_key_create") == NULL; /* once */
    printf("%s: stderr was \"%s\"\n", ok ? "PASS" : "FAIL", said);
    return ok ? 0 : 1;
}
