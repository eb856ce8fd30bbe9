/* tests/misuse.c — a program that misuses the allocator on purpose.
 *
 * `misuse MODE` makes one mistake of the kind a memory checker must catch in
 * a program that uses hcmalloc, as it would with glibc's malloc.
 * tests/expect_reports.sh runs every mode under memcheck or AddressSanitizer
 * and fails when the checker stays silent. `misuse clean` makes no mistake
 * and must draw no report, so a checker that flags everything fails too.
 * Each stage links this file against its own allocator (tests/reliability.bzl).
 * May touch: the public API only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hcmalloc.h"
#include "common/size_class.h"

/* Where the bad accesses go, so the compiler cannot drop them. */
static volatile unsigned char sink;

static unsigned char *must_malloc(size_t size) {
    unsigned char *p = hc_malloc(size);
    if (p == NULL) {
        fprintf(stderr, "misuse: hc_malloc(%zu) failed\n", size);
        _Exit(2);
    }
    return p;
}

static int clean(void) {
    /* Everything the other modes do, done right: every byte written and read
     * back, every block freed with its size. */
    static const size_t sizes[] = {0, 1, 7, 8, 20, 32, 64, 100, 1000, 4096, 70000,
                                   HC_MAX_SMALL_SIZE, HC_MAX_SMALL_SIZE + 100};
    unsigned char *blocks[sizeof sizes / sizeof sizes[0]];
    unsigned sum = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        blocks[i] = must_malloc(sizes[i]);
        memset(blocks[i], (int)i, sizes[i]);
    }
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        for (size_t j = 0; j < sizes[i]; j++) sum += blocks[i][j];
        hc_free_sized(blocks[i], sizes[i]);
    }
    unsigned char *z = hc_calloc(10, 10);
    for (size_t j = 0; j < 100; j++) sum += z[j];
    hc_free_sized(z, 100);
    /* Reuse: the objects freed above come back and are written again. */
    for (int round = 0; round < 3; round++) {
        unsigned char *p = must_malloc(64);
        memset(p, round, 64);
        sum += p[63];
        hc_free_sized(p, 64);
    }
    sink = (unsigned char)sum;
    return 0;
}

static int use_after_free(void) {
    unsigned char *p = must_malloc(32);
    memset(p, 1, 32);
    hc_free_sized(p, 32);
    sink = ((volatile unsigned char *)p)[16]; /* read of a freed block */
    return 0;
}

static int double_free(void) {
    unsigned char *p = must_malloc(48);
    memset(p, 1, 48);
    hc_free_sized(p, 48);
    hc_free_sized(p, 48); /* the same block again */
    return 0;
}

/* Writes one byte past a block into its free neighbour. Objects of one class
 * are carved side by side, so among a few of them two are neighbours; the
 * upper one is freed and the lower one overflows into it. */
static int overflow(void) {
    enum { N = 16, SIZE = 64 };
    unsigned char *p[N];
    for (int i = 0; i < N; i++) p[i] = must_malloc(SIZE);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            if (p[j] == p[i] + SIZE) {
                hc_free_sized(p[j], SIZE);
                /* Into p[j]'s free-list link: any further call could follow
                 * the broken link, so the program stops here. */
                ((volatile unsigned char *)p[i])[SIZE] = 1;
                return 0;
            }
    fprintf(stderr, "misuse: no two of %d objects of %d bytes are neighbours\n", N, SIZE);
    return 2;
}

/* 20 bytes live in a 32-byte slot: byte 20 belongs to nobody. */
static int overflow_slack(void) {
    unsigned char *p = must_malloc(20);
    memset(p, 1, 20);
    ((volatile unsigned char *)p)[20] = 1;
    hc_free_sized(p, 20);
    return 0;
}

/* A large block ends inside its last page: the rest of the page is no one's. */
static int overflow_large(void) {
    const size_t size = HC_MAX_SMALL_SIZE + 100;
    unsigned char *p = must_malloc(size);
    memset(p, 1, size);
    ((volatile unsigned char *)p)[size] = 1;
    hc_free_sized(p, size);
    return 0;
}

/* The only pointer to the block dies with this frame. The block is the
 * second of its class, not the first: the first may start a fresh mapping,
 * and a one-past-the-end pointer of the previous mapping (the metadata pool
 * keeps one) would then point at it and make it look reachable. */
static __attribute__((noinline)) void leak_one(void) {
    unsigned char *kept = must_malloc(100);
    unsigned char *p = must_malloc(100);
    memset(p, 1, 100);
    sink = p[99];
    hc_free_sized(kept, 100);
}

/* Overwrites the stack below the caller so no stale copy of the leaked
 * pointer survives there for the leak checker to find. */
static __attribute__((noinline)) void scrub_stack(void) {
    volatile unsigned char junk[4096];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = 0;
}

static int leak(void) {
    leak_one();
    scrub_stack();
    return 0;
}

int main(int argc, char **argv) {
    static const struct {
        const char *name;
        int (*run)(void);
    } modes[] = {
        {"clean", clean},
        {"use_after_free", use_after_free},
        {"double_free", double_free},
        {"overflow", overflow},
        {"overflow_slack", overflow_slack},
        {"overflow_large", overflow_large},
        {"leak", leak},
    };
    if (argc == 2 && strcmp(argv[1], "features") == 0) {
        printf("%s %u\n", hc_stage_name(), hc_features());
        return 0;
    }
    for (size_t i = 0; argc == 2 && i < sizeof modes / sizeof modes[0]; i++)
        if (strcmp(argv[1], modes[i].name) == 0) return modes[i].run();
    fprintf(stderr, "usage: misuse features|clean|use_after_free|double_free|overflow|"
                    "overflow_slack|overflow_large|leak\n");
    return 2;
}
