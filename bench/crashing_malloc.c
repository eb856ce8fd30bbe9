/* bench/crashing_malloc.c — a malloc library that crashes on purpose, for
 * bench_smoke_test: passed as `--peer crashing=libcrashing_malloc.so`, it
 * shows that a peer's crash is reported (in the table and results.csv, with
 * its reason) and leaves the bench's exit status alone.
 *
 * malloc and its family are glibc's own (__libc_malloc and friends), so
 * `bench_driver name` finds malloc in this library, as the runner checks. A
 * driver run of the workload named by CRASHING_MALLOC_WORKLOAD dies of
 * SIGSEGV as it starts; every other run works.
 * May touch: glibc's allocator, /proc/self/cmdline. */
#define _GNU_SOURCE
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *__libc_malloc(size_t size);
void __libc_free(void *ptr);
void *__libc_calloc(size_t count, size_t size);
void *__libc_realloc(void *ptr, size_t size);

void *malloc(size_t size) { return __libc_malloc(size); }
void free(void *ptr) { __libc_free(ptr); }
void *calloc(size_t count, size_t size) { return __libc_calloc(count, size); }
void *realloc(void *ptr, size_t size) { return __libc_realloc(ptr, size); }

/* argv, from the kernel: a constructor of a preloaded library gets none. */
__attribute__((constructor)) static void crash_on_the_named_workload(void) {
    const char *workload = getenv("CRASHING_MALLOC_WORKLOAD");
    char cmdline[4096] = {0};
    FILE *f = fopen("/proc/self/cmdline", "r");
    if (workload == NULL || f == NULL) {
        if (f != NULL)
            fclose(f);
        return;
    }
    size_t n = fread(cmdline, 1, sizeof cmdline - 1, f);
    fclose(f);
    /* "DRIVER\0run\0WORKLOAD\0..." */
    const char *command = memchr(cmdline, '\0', n) ? cmdline + strlen(cmdline) + 1 : "";
    const char *name = command + strlen(command) + 1;
    if ((size_t)(name - cmdline) < n && strcmp(command, "run") == 0 && strcmp(name, workload) == 0)
        raise(SIGSEGV);
}
