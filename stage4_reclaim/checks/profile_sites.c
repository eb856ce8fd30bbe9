/* stage4_reclaim/checks/profile_sites.c — a program whose heap is known, for the
 * heap profiler's tests (profile_test.sh). Linked with
 * libhcmalloc_profiler.so (or preloaded onto it).
 *
 * Each site is its own function, never inlined and never a tail call, so
 * that it is the first frame above malloc in every sample:
 *   site_pages     keeps 10240 x 4 KiB        = 40 MiB live
 *   site_tiny      keeps 218453 x 48 B        ~ 10 MiB live
 *   site_huge      keeps 100 x 200 KiB        ~ 19.5 MiB live (larger than the
 *                  test's sample distance: sampled almost every time)
 *   site_even/site_odd  alternate 4 KiB blocks, 5120 each = 20 MiB live each
 *                  (a sampler with a fixed distance would lock onto one)
 *   site_churn     allocates 102400 x 1000 B = ~97.7 MiB, freeing each at once
 *   site_leak      leaks 64 x 512 B = 32 KiB (the leak check's)
 * `./profile_sites dump FILE` also writes hc_dump_heap_profile to FILE
 * before it frees everything but site_leak's blocks.
 * `./profile_sites keep` frees nothing at the end (all of it is "leaked").
 * `./profile_sites sigfork` forks from a SIGALRM handler 100 times, single-
 * threaded, while it allocates (sampled: the profiler's lock is often held).
 * `./profile_sites realloc` reallocs blocks of several sizes to their usable
 * size: each must stay where it is (sampled blocks too).
 * `./profile_sites leak` runs only site_churn (1000 times) and site_leak:
 * small enough to sample every allocation (HCMALLOC_PROFILE_SAMPLE_BYTES=1).
 * `./profile_sites dlopen BEFORE AFTER LIBRARY` writes a profile to BEFORE,
 * dlopens LIBRARY, and writes one to AFTER: the second's MAPPED_LIBRARIES
 * must name it (profile_maps.c keeps the section between dumps). */
#define _GNU_SOURCE /* sigaction, setitimer, malloc_usable_size under -std=c11 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h> /* malloc_usable_size */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/hcmalloc.h"

static void *volatile sink; /* keeps every call a call, and every block used */

#define SITE(name, bytes)                                   \
    __attribute__((noinline)) void *name(void) {            \
        void *p = malloc(bytes);                            \
        if (p == NULL) {                                    \
            perror(#name);                                  \
            exit(1);                                        \
        }                                                   \
        sink = p;                                           \
        return p;                                           \
    }
SITE(site_pages, 4096)
SITE(site_tiny, 48)
SITE(site_huge, 200 << 10)
SITE(site_even, 4096)
SITE(site_odd, 4096)
SITE(site_churn, 1000)
SITE(site_leak, 512)

#define KEEP (10240 + 218453 + 100 + 2 * 5120)
static void *keep[KEEP];

static int dump_to(const char *path) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || hc_dump_heap_profile(fd) != 0) {
        perror("hc_dump_heap_profile");
        return 1;
    }
    close(fd);
    return 0;
}

/* sigfork: SIGALRM's handler forks; the child, once the handler has
 * returned, allocates and exits (fork_signal_test's pattern: the child
 * finishes what the interrupted thread was doing). */
static volatile sig_atomic_t forked_pid = -1;
static void fork_in_handler(int sig) {
    (void)sig;
    int saved = errno;
    forked_pid = fork();
    errno = saved;
}

static int fork_from_signals(int forks_wanted) {
    struct sigaction action = {.sa_handler = fork_in_handler, .sa_flags = SA_RESTART};
    sigaction(SIGALRM, &action, NULL); /* not signal(): under -std=c11 it fires once */
    struct itimerval every_2ms = {{0, 2000}, {0, 2000}};
    setitimer(ITIMER_REAL, &every_2ms, NULL);
    int forks = 0;
    for (size_t i = 0; forks < forks_wanted; i++) {
        free(malloc(i % 5000 + 1));
        pid_t pid = forked_pid;
        if (pid == 0) {
            free(malloc(100));
            _exit(0);
        }
        if (pid > 0) {
            forked_pid = -1;
            int status = 0;
            waitpid(pid, &status, 0);
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                printf("profile_sites: a child of a fork from a signal handler ended with %#x\n", status);
                return 1;
            }
            forks++;
        }
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    printf("profile_sites: %d forks from a signal handler\n", forks);
    return 0;
}

int main(int argc, char **argv) {
    size_t n = 0;
    if (argc == 5 && strcmp(argv[1], "dlopen") == 0) {
        if (dump_to(argv[2]) != 0)
            return 1;
        if (dlopen(argv[4], RTLD_NOW | RTLD_LOCAL) == NULL) {
            fprintf(stderr, "profile_sites: %s\n", dlerror());
            return 1;
        }
        return dump_to(argv[3]);
    }
    if (argc == 2 && strcmp(argv[1], "sigfork") == 0)
        return fork_from_signals(100);
    if (argc == 2 && strcmp(argv[1], "realloc") == 0) {
        /* Run with every allocation sampled: each block is a span of its
         * own, and realloc to its usable size must still keep it. */
        static const size_t sizes[] = {3, 100, 2051, 8195, 16387, 300000};
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            char *p = malloc(sizes[i]);
            size_t usable = malloc_usable_size(p);
            char *q = realloc(p, usable);
            if (q != p) {
                printf("profile_sites: realloc(p, %zu), the usable size of a %zu-byte block, moved it\n",
                       usable, sizes[i]);
                return 1;
            }
            q[usable - 1] = 1;
            free(q);
        }
        printf("profile_sites: realloc to the usable size kept every block\n");
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "leak") == 0) {
        for (int i = 0; i < 1000; i++) free(site_churn());
        for (int i = 0; i < 64; i++) site_leak();
        printf("profile_sites: 64 blocks of 512 bytes leaked\n");
        return 0;
    }
    for (int i = 0; i < 10240; i++) keep[n++] = site_pages();
    for (int i = 0; i < 218453; i++) keep[n++] = site_tiny();
    for (int i = 0; i < 100; i++) keep[n++] = site_huge();
    for (int i = 0; i < 5120; i++) {
        keep[n++] = site_even();
        keep[n++] = site_odd();
    }
    for (int i = 0; i < 102400; i++) free(site_churn());
    for (int i = 0; i < 64; i++) site_leak();
    if (argc == 3 && strcmp(argv[1], "dump") == 0 && dump_to(argv[2]) != 0)
        return 1;
    if (argc == 2 && strcmp(argv[1], "keep") == 0) {
        printf("profile_sites: %zu blocks kept to the end\n", n);
        return 0;
    }
    for (size_t i = 0; i < n; i++) free(keep[i]);
    printf("profile_sites: %zu blocks kept, then freed\n", n);
    return 0;
}
