/* stage4_reclaim/checks/dropin_api_check.c — the API contract (tests/conformance_test.cc)
 * and glibc's extras, checked through the C malloc names of whatever
 * allocator the process runs on. Run by :dropin_api_test under
 * LD_PRELOAD=libhcmalloc.so; it first proves hcmalloc is the one answering.
 * Plain C, no test framework: the framework would allocate too, and this
 * program is about exactly which allocator sees which call.
 * Built with -fno-builtin so the compiler keeps every call it could prove
 * pointless (malloc(0) then free, malloc(SIZE_MAX)). */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dlfcn.h>
#include "tests/check.h"

/* C23, not in this glibc: looked up at run time (main), so the program also
 * links and runs without the library, where the lookup fails loudly. */
static void (*free_sized)(void *ptr, size_t size);
static void (*free_aligned_sized)(void *ptr, size_t alignment, size_t size);


static int is_aligned(const void *p, size_t align) { return (uintptr_t)p % align == 0; }

/* ---- Which allocator is this? ------------------------------------------- */

static void check_hcmalloc_is_loaded(void) {
    FILE *maps = fopen("/proc/self/maps", "r");
    CHECK(maps != NULL, "cannot open /proc/self/maps");
    char line[512];
    int found = 0;
    while (maps != NULL && fgets(line, sizeof line, maps) != NULL)
        if (strstr(line, "libhcmalloc.so") != NULL)
            found = 1;
    if (maps != NULL)
        fclose(maps);
    CHECK(found, "libhcmalloc.so is not mapped: run under LD_PRELOAD");
    /* And it answers malloc: 33 bytes is hcmalloc's class 48 (glibc: 40). */
    void *p = malloc(33);
    CHECK(malloc_usable_size(p) == 48, "usable size of malloc(33) is %zu, hcmalloc gives 48",
          malloc_usable_size(p));
    free(p);
}

/* ---- The contract of common/hcmalloc.h, through the C names --------------- */

static void check_malloc_sizes(void) {
    for (size_t size = 1; size <= 600 * 1024; size += size < 4096 ? 1 : size / 7) {
        unsigned char *p = malloc(size);
        CHECK(p != NULL, "malloc(%zu)", size);
        if (p == NULL) continue;
        CHECK(is_aligned(p, size >= 16 ? 16 : 8), "malloc(%zu) = %p", size, (void *)p);
        CHECK(malloc_usable_size(p) >= size, "usable %zu < %zu", malloc_usable_size(p), size);
        p[0] = 1;
        p[size - 1] = 2;
        if (size % 3 == 0)
            free_sized(p, size);
        else
            free(p);
    }
}

static void check_malloc_zero(void) {
    void *seen[100];
    for (int i = 0; i < 100; i++) {
        seen[i] = malloc(0);
        CHECK(seen[i] != NULL, "malloc(0) returned NULL");
        for (int j = 0; j < i; j++)
            CHECK(seen[i] != seen[j], "malloc(0) returned %p twice", seen[i]);
    }
    for (int i = 0; i < 100; i++)
        free(seen[i]);
}

static void check_calloc(void) {
    static const size_t sizes[] = {1, 24, 1000, 5000, 300 * 1024, 3 << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        size_t n = sizes[i];
        /* Dirty a block of the same size first, so calloc gets reused memory. */
        unsigned char *dirty = malloc(n);
        memset(dirty, 0xAB, n);
        free(dirty);
        unsigned char *z = calloc(n, 1);
        CHECK(z != NULL, "calloc(%zu, 1)", n);
        size_t nonzero = 0;
        for (size_t k = 0; z != NULL && k < n; k++)
            nonzero += z[k] != 0;
        CHECK(nonzero == 0, "calloc(%zu) has %zu nonzero bytes", n, nonzero);
        free(z);
    }
    errno = 0;
    CHECK(calloc(SIZE_MAX / 2, 3) == NULL && errno == ENOMEM, "calloc overflow");
    errno = 0;
    CHECK(calloc((size_t)1 << 33, (size_t)1 << 31) == NULL && errno == ENOMEM, "calloc overflow");
}

static void check_huge(void) {
    static const size_t sizes[] = {SIZE_MAX, SIZE_MAX - 4096, (size_t)PTRDIFF_MAX + 1, (size_t)1 << 62};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        errno = 0;
        CHECK(malloc(sizes[i]) == NULL && errno == ENOMEM, "malloc(%zu)", sizes[i]);
    }
    free(NULL);
    free_sized(NULL, 10);
    free_aligned_sized(NULL, 64, 10);
    CHECK(malloc_usable_size(NULL) == 0, "malloc_usable_size(NULL)");
}

static void check_realloc(void) {
    unsigned char *p = realloc(NULL, 10); /* = malloc */
    CHECK(p != NULL, "realloc(NULL, 10)");
    for (int i = 0; i < 10; i++) p[i] = (unsigned char)i;
    static const size_t steps[] = {20, 100, 5000, 300 * 1024, 2 << 20, 40, 10};
    for (size_t s = 0; s < sizeof steps / sizeof *steps; s++) {
        p = realloc(p, steps[s]);
        CHECK(p != NULL, "realloc to %zu", steps[s]);
        for (int i = 0; i < 10; i++)
            CHECK(p[i] == i, "byte %d lost at %zu", i, steps[s]);
    }
    errno = 0;
    CHECK(realloc(p, SIZE_MAX - 10) == NULL && errno == ENOMEM, "realloc to SIZE_MAX");
    CHECK(p[9] == 9, "a failed realloc leaves the block alone");
    errno = 0;
    CHECK(reallocarray(p, SIZE_MAX / 2, 3) == NULL && errno == ENOMEM, "reallocarray overflow");
    p = reallocarray(p, 100, 4);
    CHECK(p != NULL && p[9] == 9, "reallocarray(p, 100, 4)");
    CHECK(realloc(p, 0) == NULL, "glibc's realloc(p, 0) frees p and returns NULL");
    void *q = realloc(NULL, 0);
    CHECK(q != NULL, "realloc(NULL, 0) = malloc(0), a unique pointer");
    free(q);
}

/* ---- Alignment: every power of two up to 1 MiB ---------------------------- */

static const size_t align_sizes[] = {1, 8, 100, 4096, 70000};

static void check_posix_memalign(void) {
    for (size_t align = sizeof(void *); align <= (1u << 20); align *= 2) {
        for (size_t i = 0; i < sizeof align_sizes / sizeof *align_sizes; i++) {
            void *p = NULL;
            int rc = posix_memalign(&p, align, align_sizes[i]);
            CHECK(rc == 0 && p != NULL, "posix_memalign(%zu, %zu) = %d", align, align_sizes[i], rc);
            CHECK(is_aligned(p, align), "posix_memalign(%zu) = %p", align, p);
            CHECK(malloc_usable_size(p) >= align_sizes[i], "usable");
            memset(p, 0x5A, align_sizes[i]);
            free(p);
        }
    }
    /* Not a power of two, or not a multiple of sizeof(void *): EINVAL, and
     * *memptr untouched. */
    static const size_t bad[] = {0, 1, 2, 4, 12, 24, 48, 100, 3 << 10, SIZE_MAX};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        void *sentinel = (void *)0x1234, *p = sentinel;
        CHECK(posix_memalign(&p, bad[i], 64) == EINVAL, "posix_memalign(%zu)", bad[i]);
        CHECK(p == sentinel, "posix_memalign(%zu) wrote *memptr", bad[i]);
    }
    /* Out of memory: ENOMEM returned, and errno ENOMEM too, as glibc,
     * tcmalloc, jemalloc and mimalloc leave it (glibc's tst-malloc-thread-fail). */
    void *sentinel = (void *)0x1234, *p = sentinel;
    errno = 77;
    CHECK(posix_memalign(&p, 64, SIZE_MAX - 100) == ENOMEM, "posix_memalign(64, huge)");
    CHECK(errno == ENOMEM, "posix_memalign left errno %d, not ENOMEM", errno);
    CHECK(p == sentinel, "posix_memalign(huge) wrote *memptr");
}

static void check_aligned_alloc_and_memalign(void) {
    for (size_t align = 1; align <= (1u << 20); align *= 2) {
        for (size_t i = 0; i < sizeof align_sizes / sizeof *align_sizes; i++) {
            size_t size = align_sizes[i];
            void *a = aligned_alloc(align, size);
            CHECK(a != NULL && is_aligned(a, align), "aligned_alloc(%zu, %zu) = %p", align, size, a);
            void *m = memalign(align, size);
            CHECK(m != NULL && is_aligned(m, align), "memalign(%zu, %zu) = %p", align, size, m);
            if (a) memset(a, 1, size);
            if (m) memset(m, 2, size);
            if (size % 2)
                free_aligned_sized(a, align, size);
            else
                free(a);
            free(m);
        }
    }
    errno = 0;
    CHECK(aligned_alloc(3, 64) == NULL && errno == EINVAL, "aligned_alloc(3)");
    errno = 0;
    CHECK(aligned_alloc(0, 64) == NULL && errno == EINVAL, "aligned_alloc(0)");
    /* glibc's memalign rounds an odd alignment up to a power of two. */
    void *m = memalign(24, 10);
    CHECK(m != NULL && is_aligned(m, 32), "memalign(24) = %p", m);
    free(m);
    errno = 0;
    CHECK(memalign(SIZE_MAX / 2 + 2, 10) == NULL && errno == EINVAL, "memalign(too big)");
    errno = 0;
    CHECK(memalign(64, SIZE_MAX - 100) == NULL && errno == ENOMEM, "memalign(huge)");
}

static void check_valloc(void) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *v = valloc(10);
    CHECK(v != NULL && is_aligned(v, page), "valloc = %p", v);
    free(v);
    void *pv = pvalloc(1);
    CHECK(pv != NULL && is_aligned(pv, page) && malloc_usable_size(pv) >= page, "pvalloc(1)");
    memset(pv, 3, page); /* a whole page, as pvalloc promises */
    free(pv);
    errno = 0;
    CHECK(pvalloc(SIZE_MAX - 10) == NULL && errno == ENOMEM, "pvalloc overflow");
}

/* ---- Threads: a block freed by another thread ----------------------------- */

static void *free_them(void *arg) {
    void **blocks = arg;
    for (int i = 0; i < 1000; i++)
        free(blocks[i]);
    return NULL;
}

static void check_cross_thread_free(void) {
    static void *blocks[1000];
    for (int i = 0; i < 1000; i++)
        blocks[i] = malloc((size_t)(i * 37 % 3000) + 1);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, free_them, blocks) == 0, "pthread_create");
    pthread_join(t, NULL);
}

/* ---- glibc's own entry points and statistics ---------------------------------- */

void *__libc_malloc(size_t size);
void __libc_free(void *ptr);
void *__libc_calloc(size_t count, size_t size);
void *__libc_realloc(void *ptr, size_t size);
void *__libc_memalign(size_t alignment, size_t size);

/* A block from one family freed by the other: both must be hcmalloc's
 * (with glibc's __libc_* behind malloc/free this aborts in free). */
static void check_libc_entry_points(void) {
    void *a = __libc_malloc(33);
    CHECK(a != NULL && malloc_usable_size(a) == 48, "__libc_malloc(33) is not hcmalloc's");
    free(a);
    void *b = malloc(100);
    __libc_free(b);
    char *c = __libc_calloc(10, 10);
    CHECK(c != NULL && c[0] == 0 && c[99] == 0, "__libc_calloc");
    c = __libc_realloc(c, 5000);
    CHECK(c != NULL && c[99] == 0, "__libc_realloc keeps the contents");
    free(c);
    c = realloc(NULL, 64);
    c = __libc_realloc(c, 200);
    __libc_free(c);
    void *d = __libc_memalign(4096, 100);
    CHECK(d != NULL && is_aligned(d, 4096), "__libc_memalign(4096)");
    free(d);
}

static void check_trim_and_mallinfo2(void) {
    enum { kBlocks = 64, kSize = 256 << 10 };
    void *blocks[kBlocks];
    for (int i = 0; i < kBlocks; i++) memset(blocks[i] = malloc(kSize), 1, kSize);
    struct mallinfo2 busy = mallinfo2();
    CHECK(busy.uordblks >= (size_t)kBlocks * kSize, "mallinfo2 uordblks %zu", busy.uordblks);
    CHECK(busy.arena >= busy.uordblks, "mallinfo2 arena %zu < uordblks %zu", busy.arena, busy.uordblks);
    for (int i = 0; i < kBlocks; i++) free(blocks[i]);
    struct mallinfo2 freed = mallinfo2();
    CHECK(freed.uordblks + (size_t)kBlocks * kSize <= busy.uordblks + kSize,
          "mallinfo2 uordblks %zu after freeing, %zu before", freed.uordblks, busy.uordblks);
    CHECK(malloc_trim(0) == 1, "malloc_trim");
    struct mallinfo2 trimmed = mallinfo2();
    CHECK(trimmed.keepcost >= (size_t)kBlocks * kSize,
          "after malloc_trim, keepcost (released) %zu", trimmed.keepcost);
}

/* The old mallinfo is ours too (not glibc's report of an unused heap), its
 * figures mallinfo2's clamped to int. Deprecated in glibc's header: the
 * call is on purpose. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static void check_mallinfo(void) {
    enum { kSize = 1 << 20 };
    void *block = malloc(kSize);
    memset(block, 1, kSize);
    struct mallinfo info = mallinfo();
    struct mallinfo2 wide = mallinfo2();
    CHECK(info.uordblks >= kSize, "mallinfo uordblks %d", info.uordblks);
    CHECK(info.arena > 0 && (size_t)info.arena == (wide.arena > INT32_MAX ? INT32_MAX : wide.arena),
          "mallinfo arena %d, mallinfo2 arena %zu", info.arena, wide.arena);
    free(block);
}
#pragma GCC diagnostic pop

/* malloc_stats with a cancellation pending still writes its report: the
 * write(2) underneath is a cancellation point. stderr goes to a pipe. */
static void *stats_with_cancel_pending(void *arg) {
    (void)arg;
    pthread_cancel(pthread_self()); /* pending: deferred cancellation */
    malloc_stats();
    pthread_testcancel(); /* ends the thread here, after the report */
    return NULL;
}

static void check_malloc_stats_cancelled(void) {
    int fds[2];
    CHECK(pipe(fds) == 0, "pipe");
    int saved_stderr = dup(STDERR_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[1]);
    pthread_t t;
    pthread_create(&t, NULL, stats_with_cancel_pending, NULL);
    void *result = NULL;
    pthread_join(t, &result);
    dup2(saved_stderr, STDERR_FILENO);
    close(saved_stderr);
    char buf[4096];
    ssize_t n = read(fds[0], buf, sizeof buf - 1);
    close(fds[0]);
    buf[n > 0 ? n : 0] = '\0';
    CHECK(result == PTHREAD_CANCELED, "the thread was not cancelled");
    CHECK(strstr(buf, "hcmalloc (") != NULL, "malloc_stats wrote %zd bytes with a cancel pending", n);
}

int main(void) {
    *(void **)&free_sized = dlsym(RTLD_DEFAULT, "free_sized");
    *(void **)&free_aligned_sized = dlsym(RTLD_DEFAULT, "free_aligned_sized");
    if (free_sized == NULL || free_aligned_sized == NULL) {
        fprintf(stderr, "FAIL: no free_sized/free_aligned_sized: run under LD_PRELOAD=libhcmalloc.so\n");
        return 1;
    }
    check_hcmalloc_is_loaded();
    check_malloc_sizes();
    check_malloc_zero();
    check_calloc();
    check_huge();
    check_realloc();
    check_posix_memalign();
    check_aligned_alloc_and_memalign();
    check_valloc();
    check_cross_thread_free();
    check_libc_entry_points();
    check_trim_and_mallinfo2();
    check_mallinfo();
    check_malloc_stats_cancelled();
    if (failures != 0) {
        fprintf(stderr, "dropin_api_check: %d failures\n", failures);
        return 1;
    }
    printf("dropin_api_check: PASS (malloc family through libhcmalloc.so)\n");
    return 0;
}
