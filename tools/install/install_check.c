/* tools/install/install_check.c — a C program that knows hcmalloc only as an
 * installed package (<hcmalloc.h>, pkg-config), for tools/install/install_test.sh.
 *
 *   install_check linked            built with `pkg-config --libs`: malloc and
 *                                   hc_get_property are hcmalloc's
 *   install_check preloaded LIBRARY built without hcmalloc, run through the
 *                                   wrapper: LIBRARY is mapped, it is the
 *                                   process's malloc, and no libstdc++ came
 *                                   with it
 * The preloaded build is compiled with -DINSTALL_CHECK_PRELOADED_ONLY: it
 * must not name hcmalloc's functions, or the link would need the library.
 * Prints one line, "install_check: PASS ..." or "install_check: FAIL ...". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hcmalloc.h>

typedef int (*get_property_fn)(const char *name, size_t *value);

/* Is `needle` in /proc/self/maps? */
static int mapped(const char *needle) {
    static char maps[1 << 20];
    int fd = open("/proc/self/maps", O_RDONLY);
    if (fd < 0)
        return 0;
    size_t len = 0;
    ssize_t n;
    while (len < sizeof maps - 1 && (n = read(fd, maps + len, sizeof maps - 1 - len)) > 0)
        len += (size_t)n;
    close(fd);
    maps[len] = '\0';
    return strstr(maps, needle) != NULL;
}

/* In use before and after a 1 MiB block, and the usable size of a 33-byte
 * one (48 under hcmalloc's classes, 40 under glibc). */
static int allocator_answers(get_property_fn get_property, const char *how) {
    size_t before = 0, after = 0;
    if (get_property == NULL || !get_property("generic.current_allocated_bytes", &before)) {
        printf("install_check: FAIL (%s): no hc_get_property\n", how);
        return 0;
    }
    char *big = malloc(1 << 20);
    memset(big, 1, 1 << 20);
    get_property("generic.current_allocated_bytes", &after);
    void *p = malloc(33);
    size_t usable = malloc_usable_size(p);
    free(p);
    free(big);
    if (usable != 48 || after < before + (1 << 20)) {
        printf("install_check: FAIL (%s): usable(malloc(33)) = %zu, in use %zu -> %zu after malloc(1 MiB)\n",
               how, usable, before, after);
        return 0;
    }
    printf("install_check: PASS (%s): usable(malloc(33)) = 48, in use %zu -> %zu after malloc(1 MiB)\n",
           how, before, after);
    return 1;
}

int main(int argc, char **argv) {
#ifndef INSTALL_CHECK_PRELOADED_ONLY
    if (argc == 2 && strcmp(argv[1], "linked") == 0)
        return allocator_answers(hc_get_property, "linked") ? 0 : 1;
#endif
    if (argc == 3 && strcmp(argv[1], "preloaded") == 0) {
        if (!mapped(argv[2])) {
            printf("install_check: FAIL (preloaded): %s is not in /proc/self/maps\n", argv[2]);
            return 1;
        }
        if (mapped("libstdc++")) {
            printf("install_check: FAIL (preloaded): libstdc++ is mapped into a C program\n");
            return 1;
        }
        return allocator_answers((get_property_fn)dlsym(RTLD_DEFAULT, "hc_get_property"), "preloaded") ? 0 : 1;
    }
    fprintf(stderr, "usage: install_check linked | preloaded LIBRARY\n");
    return 2;
}
