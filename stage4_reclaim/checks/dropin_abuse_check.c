/* stage4_reclaim/checks/dropin_abuse_check.c CASE — one heap-misuse pattern (the
 * how2heap catalogue's first steps, tests/heap_abuse_test.cc's set) through
 * the C malloc names, for :dropin_abuse_test to run under the default and
 * the hardened drop-in. Prints NOT_CAUGHT if the mistake went through (as
 * mimalloc-bench's security programs do); an allocator that catches it
 * stops the program first. -fno-builtin keeps every call. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void not_caught(void) {
    puts("NOT_CAUGHT");
    fflush(stdout);
}

/* Where a forged link points: harmless memory of the program's own. */
static _Alignas(64) unsigned char target[256];

/* An address as a number the compiler cannot reason about: it knows that
 * malloc never returns a static object or a freed block, and would fold
 * the comparisons below to false. */
static uintptr_t addr(const void *p) {
    volatile uintptr_t v = (uintptr_t)p;
    return v;
}

static void warm(size_t size) {
    void *p[64];
    for (int i = 0; i < 64; i++) p[i] = malloc(size);
    for (int i = 64; i-- > 0;) free(p[i]);
}

/* The forged address comes back from malloc: the primitive exploits want. */
static void uaf_link(void) {
    warm(48);
    void *a = malloc(48), *b = malloc(48);
    free(a);
    free(b);
    *(void **)b = target;
    uintptr_t first = addr(malloc(48)), second = addr(malloc(48));
    if (first == addr(b) && second == addr(target)) not_caught();
}

static void overflow_link(void) {
    char *a = malloc(112), *b = malloc(112);
    if (addr(b) != addr(a) + 112) {
        puts("SKIPPED: not neighbours");
        return;
    }
    free(b);
    void *forged = target;
    memset(a, 'A', 112);
    memcpy(a + 112, &forged, sizeof forged); /* 8 bytes past a's end */
    uintptr_t first = addr(malloc(112)), second = addr(malloc(112));
    if (first == addr(b) && second == addr(target)) not_caught();
}

static void double_free_cold(void) {
    void *p = malloc(160);
    free(p);
    free(p);
    malloc_trim(0); /* flushes this thread's cache: the list is cut */
    not_caught();
}

static void double_free_warm(void) {
    warm(192);
    void *p = malloc(192);
    free(p);
    free(p);
    malloc_trim(0);
    not_caught();
}

static void double_free_aba(void) {
    warm(224);
    void *a = malloc(224), *b = malloc(224);
    free(a);
    free(b);
    free(a);
    malloc_trim(0);
    not_caught();
}

static void *free_and_flush(void *p) {
    free(p);
    malloc_trim(0);
    return NULL;
}

static void double_free_threads(void) {
    void *p = malloc(3000);
    pthread_t t;
    pthread_create(&t, NULL, free_and_flush, p);
    pthread_join(t, NULL);
    pthread_create(&t, NULL, free_and_flush, p);
    pthread_join(t, NULL);
    not_caught();
}

static void never_handed_out(void) {
    char *p = malloc(48);
    free(p + 20 * 48); /* a slot of p's span no malloc returned */
    malloc_trim(0);
    not_caught();
}

/* Inside a block of a class that is not a power of two (48 bytes), at an
 * offset aligned for it: the page map's object-start test stops it. */
static void interior_free(void) {
    char *p = calloc(1, 40);
    free(p + 16);
    not_caught();
}

/* The next slot's start, which no malloc returned (calloc(1, 300): a class
 * no other case uses, so its span is fresh and carved in order). */
static void next_slot(void) {
    char *p = calloc(1, 300);
    free(p + malloc_usable_size(p));
    malloc_trim(0);
    not_caught();
}

/* C23's free_sized with another block's size (a size of 1..4 KiB, where
 * the default build's sized fast path trusts it): the block lands on the
 * wrong class's list, and the next malloc of that size hands a 112-byte
 * slot out for 2,000 bytes. Past the call is NOT_CAUGHT already: the
 * hardened library stops at the call, not at a later malloc. Looked up at
 * run time: glibc 2.36 does not declare it. */
static void free_sized_wrong_size(void) {
    void (*free_sized)(void *, size_t);
    *(void **)&free_sized = dlsym(RTLD_DEFAULT, "free_sized");
    if (free_sized == NULL) {
        puts("SKIPPED: no free_sized");
        return;
    }
    warm(2000);
    char *p = malloc(100);
    free_sized(p, 2000);
    not_caught();
    for (int i = 0; i < 64; i++)
        if (addr(malloc(2000)) == addr(p)) {
            puts("handed out again as 2,000 bytes");
            return;
        }
}

/* C23's free_aligned_sized with a size of another class than
 * aligned_alloc's (64 bytes at 64: the 64-byte class; 128 names the
 * 128-byte one). Freed by address, it does no harm in the default build;
 * past the call is NOT_CAUGHT. */
static void free_aligned_sized_wrong_size(void) {
    void (*free_aligned_sized)(void *, size_t, size_t);
    *(void **)&free_aligned_sized = dlsym(RTLD_DEFAULT, "free_aligned_sized");
    if (free_aligned_sized == NULL) {
        puts("SKIPPED: no free_aligned_sized");
        return;
    }
    void *p = aligned_alloc(64, 64);
    free_aligned_sized(p, 64, 128);
    not_caught();
}

/* malloc_usable_size of a block already freed: a program that asks has lost
 * track of it. */
static void usable_size_after_free(void) {
    char *p = malloc(16);
    free(p);
    printf("%zu usable\n", malloc_usable_size(p));
    not_caught();
}

static const struct {
    const char *name;
    void (*run)(void);
} kCases[] = {
    {"uaf_link", uaf_link},
    {"overflow_link", overflow_link},
    {"double_free_cold", double_free_cold},
    {"double_free_warm", double_free_warm},
    {"double_free_aba", double_free_aba},
    {"double_free_threads", double_free_threads},
    {"never_handed_out", never_handed_out},
    {"interior_free", interior_free},
    {"next_slot", next_slot},
    {"free_sized_wrong_size", free_sized_wrong_size},
    {"free_aligned_sized_wrong_size", free_aligned_sized_wrong_size},
    {"usable_size_after_free", usable_size_after_free},
};

int main(int argc, char **argv) {
    for (size_t i = 0; argc == 2 && i < sizeof kCases / sizeof kCases[0]; i++)
        if (strcmp(argv[1], kCases[i].name) == 0) {
            kCases[i].run();
            return 0;
        }
    fprintf(stderr, "usage: dropin_abuse_check CASE (uaf_link, overflow_link, double_free_cold, ...)\n");
    return 2;
}
