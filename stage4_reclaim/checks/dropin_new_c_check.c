/* stage4_reclaim/checks/dropin_new_c_check.c — operator new called from a process
 * that has no libstdc++ (a C program), under LD_PRELOAD=libhcmalloc.so:
 * the library's weak references to libstdc++ are null here
 * (dropin_new.cc), and its fallback must hold: new works, nothrow new
 * fails with NULL, and a throwing new that fails prints one line and
 * aborts instead of calling through a null pointer. :dropin_api_test
 * runs it. The operators are found by their mangled names with dlsym. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef void *(*new_fn)(size_t);
typedef void *(*nothrow_new_fn)(size_t, const void *);

static int failures;

#define CHECK(cond, what)                                                  \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, what); \
            failures++;                                                    \
        }                                                                  \
    } while (0)

int main(void) {
    CHECK(dlsym(RTLD_DEFAULT, "_ZSt15get_new_handlerv") == NULL, "libstdc++ is loaded: the check means nothing");
    new_fn plain_new = (new_fn)dlsym(RTLD_DEFAULT, "_Znwm");
    nothrow_new_fn nothrow_new = (nothrow_new_fn)dlsym(RTLD_DEFAULT, "_ZnwmRKSt9nothrow_t");
    void (*plain_delete)(void *) = (void (*)(void *))dlsym(RTLD_DEFAULT, "_ZdlPv");
    CHECK(plain_new && nothrow_new && plain_delete, "no operator new/delete in the process");
    if (failures != 0)
        return 1;
    void *p = plain_new(100);
    CHECK(p != NULL, "operator new(100)");
    plain_delete(p);
    char tag; /* nothrow_t is empty: any address stands for std::nothrow */
    CHECK(nothrow_new(SIZE_MAX - 4096, &tag) == NULL, "nothrow new(huge) is not NULL");

    /* A throwing new that fails, in a child: one line, then SIGABRT. */
    int err[2];
    if (pipe(err) != 0)
        return perror("pipe"), 1;
    pid_t child = fork();
    if (child == 0) {
        dup2(err[1], STDERR_FILENO);
        plain_new(SIZE_MAX - 4096);
        _exit(0); /* not reached if the fallback holds */
    }
    close(err[1]);
    char text[512] = {0};
    size_t len = 0;
    ssize_t n;
    while (len < sizeof text - 1 && (n = read(err[0], text + len, sizeof text - 1 - len)) > 0)
        len += (size_t)n;
    int status = 0;
    waitpid(child, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT, "a failed new did not abort");
    CHECK(strstr(text, "operator new: out of memory, and no libstdc++") != NULL, "a failed new said nothing");
    if (failures != 0) {
        fprintf(stderr, "dropin_new_c_check: %d failures (the child said: %s)\n", failures, text);
        return 1;
    }
    printf("dropin_new_c_check: PASS (operator new in a process without libstdc++: works, nothrow NULL, "
           "a failure aborts with its message)\n");
    return 0;
}
