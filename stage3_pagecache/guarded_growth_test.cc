// stage3_pagecache/guarded_growth_test.cc — the hardened build's realloc of
// a guarded block that grows by whole pages (common/harden_guard.h,
// harden_guarded_move): the block still moves, so a stale pointer faults,
// but the kernel carries its pages to the new mapping (mremap) instead of
// a copy, so a buffer grown a page at a time is no longer quadratic. Built
// hardened only (hardened_test in BUILD). The test wraps mremap at link
// time (-Wl,--wrap=mremap): the calls in common/harden_guard.c, another
// object file, reach __wrap_mremap below, which counts them, refuses one
// kind when told to, or plays another thread mapping into the ranges the
// move frees.
#include <errno.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

extern "C" {
#include "common/harden.h"
#include "common/hcmalloc.h"

void *__real_mremap(void *old, size_t old_size, size_t new_size, int flags, ...);

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif

static int moves, grows_in_place;
// Which calls to refuse: the move that keeps the old range, the growth in
// place, the move back (harden_guarded_move makes them in that order).
static bool refuse_move, refuse_growth, refuse_move_back;
// Another thread's mappings, played here: one put into the gap a growth in
// place asks for, just before it, and one into the range a move back
// leaves, just after it.
static bool occupy_gap_and_vacated_range;
static void *in_gap, *in_vacated;
static size_t in_gap_bytes, in_vacated_bytes;

static void *map_page_at(void *where, size_t bytes) {
    void *p = mmap(where, bytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    return p == where ? p : nullptr;
}

void *__wrap_mremap(void *old, size_t old_size, size_t new_size, int flags, ...) {
    void *dest = nullptr;
    if (flags & MREMAP_FIXED) {
        va_list args;
        va_start(args, flags);
        dest = va_arg(args, void *);
        va_end(args);
    }
    if ((refuse_move && flags == (MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP)) ||
        (refuse_growth && flags == 0) || (refuse_move_back && flags == (MREMAP_MAYMOVE | MREMAP_FIXED))) {
        errno = ENOMEM;
        return MAP_FAILED;
    }
    if (occupy_gap_and_vacated_range && flags == 0) {
        in_gap_bytes = new_size - old_size;
        in_gap = map_page_at(static_cast<char *>(old) + old_size, in_gap_bytes);
    }
    if (flags == 0)
        grows_in_place++;
    else
        moves++;
    void *result = __real_mremap(old, old_size, new_size, flags, dest);
    if (occupy_gap_and_vacated_range && flags == (MREMAP_MAYMOVE | MREMAP_FIXED) && result != MAP_FAILED) {
        in_vacated_bytes = old_size;
        in_vacated = map_page_at(old, in_vacated_bytes);
    }
    return result;
}
}

namespace {

void Mark(unsigned char *p, size_t from, size_t to) {
    for (size_t i = from; i < to; i++) p[i] = static_cast<unsigned char>(i * 7 + (i >> 12));
}
bool Marked(const unsigned char *p, size_t to) {
    for (size_t i = 0; i < to; i++)
        if (p[i] != static_cast<unsigned char>(i * 7 + (i >> 12))) return false;
    return true;
}

// A stale pointer's fault: SIGSEGV, or, under a sanitizer, which catches
// the signal, its report and a failing exit.
bool FaultedOrSanitizerReported(int status) {
    return (WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) || (WIFEXITED(status) && WEXITSTATUS(status) != 0);
}

// Calls visit(start, end, perms) for each memory area of the kernel's in
// /proc/self/maps (read with stdio, which may allocate: call it outside
// any allocator call).
template <class Visit>
void ForEachArea(Visit visit) {
    FILE *maps = fopen("/proc/self/maps", "r");
    ASSERT_NE(maps, nullptr);
    unsigned long start, end;
    char perms[8], line[512];
    while (fgets(line, sizeof line, maps) != nullptr)
        if (sscanf(line, "%lx-%lx %7s", &start, &end, perms) == 3) visit(start, end, perms);
    fclose(maps);
}

int AreasOverlapping(uintptr_t from, uintptr_t to) {
    int areas = 0;
    ForEachArea([&](uintptr_t start, uintptr_t end, const char *) { areas += start < to && end > from; });
    return areas;
}

// Still the played thread's mapping: a read-only area covers it (the
// allocator maps none: its areas are no-access or read-write), so a new
// block of ours mapped where it was does not count.
bool StillTheirs(void *p, size_t bytes) {
    uintptr_t from = reinterpret_cast<uintptr_t>(p);
    bool found = false;
    ForEachArea([&](uintptr_t start, uintptr_t end, const char *perms) {
        found |= start <= from && end >= from + bytes && strncmp(perms, "r--", 3) == 0;
    });
    return found;
}

// A guarded block of `size` bytes, every byte marked.
unsigned char *MarkedBlock(size_t size) {
    auto *p = static_cast<unsigned char *>(hc_malloc(size));
    if (p != nullptr) Mark(p, 0, size);
    return p;
}

#define SKIP_UNLESS_HARDENED() \
    if (!HC_HARDENED) GTEST_SKIP() << "guarded blocks are the hardened build's (run as guarded_growth_hardened_test)"

TEST(GuardedGrowth, ABlockGrownByAPageMovesItsPagesNotItsBytes) {
    SKIP_UNLESS_HARDENED();
    const size_t size = 64 << 10;
    unsigned char *p = MarkedBlock(size);
    ASSERT_NE(p, nullptr);
    moves = grows_in_place = 0;
    auto *q = static_cast<unsigned char *>(hc_realloc(p, size + 4096));
    ASSERT_NE(q, nullptr);
    EXPECT_NE(q, p) << "a guarded block that grows moves: a stale pointer must fault";
    EXPECT_EQ(moves, 1) << "its pages carried to the new mapping";
    EXPECT_EQ(grows_in_place, 1) << "and their area grown over the new page";
    EXPECT_TRUE(Marked(q, size));
    Mark(q, size, size + 4096);
    EXPECT_EXIT(p[0] = 1, FaultedOrSanitizerReported, "") << "the old addresses fault";
    EXPECT_EXIT(q[size + 4096] = 1, FaultedOrSanitizerReported, "") << "the new block ends at its guard";
    hc_free(q);
}

// A buffer grown a page at a time stays one memory area of the kernel's:
// with an area per page added, every move would carry them all.
TEST(GuardedGrowth, ABufferGrownPageByPageStaysOneArea) {
    SKIP_UNLESS_HARDENED();
    size_t size = 4096;
    unsigned char *p = MarkedBlock(size);
    ASSERT_NE(p, nullptr);
    for (int step = 0; step < 200; step++, size += 4096) {
        auto *q = static_cast<unsigned char *>(hc_realloc(p, size + 4096));
        ASSERT_NE(q, nullptr);
        Mark(q, size, size + 4096);
        p = q;
    }
    EXPECT_TRUE(Marked(p, size));
    uintptr_t first = reinterpret_cast<uintptr_t>(p);
    int areas = AreasOverlapping(first, first + size);
    std::printf("a buffer grown by 200 pages: %d area(s) of the kernel's\n", areas);
    EXPECT_EQ(areas, 1);
    hc_free(p);
}

TEST(GuardedGrowth, AGrowthByPartOfAPageIsCopied) {
    SKIP_UNLESS_HARDENED();
    const size_t size = 64 << 10;
    unsigned char *p = MarkedBlock(size);
    ASSERT_NE(p, nullptr);
    moves = grows_in_place = 0;
    // Its end must meet the guard page, so its offset in its first page changes.
    auto *q = static_cast<unsigned char *>(hc_realloc(p, size + 100));
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(moves + grows_in_place, 0);
    EXPECT_TRUE(Marked(q, size));
    hc_free(q);
}

// Every way the kernel can refuse leaves a working block with its bytes:
// the move itself (Linux before 5.7), the growth over the new pages (another
// thread's mapping in the gap), and then the move back too.
TEST(GuardedGrowth, EveryRefusalEndsInACopy) {
    SKIP_UNLESS_HARDENED();
    struct {
        const char *what;
        bool move, growth, move_back;
    } refusals[] = {
        {"the move refused", true, false, false},
        {"the growth refused: the pages moved back", false, true, false},
        {"the growth and the move back refused: the bytes copied back", false, true, true},
    };
    for (auto &r : refusals) {
        SCOPED_TRACE(r.what);
        const size_t size = 128 << 10;
        unsigned char *p = MarkedBlock(size);
        ASSERT_NE(p, nullptr);
        refuse_move = r.move, refuse_growth = r.growth, refuse_move_back = r.move_back;
        auto *q = static_cast<unsigned char *>(hc_realloc(p, size + 8192));
        refuse_move = refuse_growth = refuse_move_back = false;
        ASSERT_NE(q, nullptr);
        EXPECT_NE(q, p);
        EXPECT_TRUE(Marked(q, size));
        Mark(q, size, size + 8192);
        hc_free(q);
    }
}

// Another thread maps into the gap between the move and the growth in
// place: the growth fails, the pages go back, and the block is copied;
// what others mapped meanwhile, there and where the pages were, is theirs
// and stays.
TEST(GuardedGrowth, AnotherThreadsMappingInTheGapIsLeftAlone) {
    SKIP_UNLESS_HARDENED();
    const size_t size = 128 << 10;
    unsigned char *p = MarkedBlock(size);
    ASSERT_NE(p, nullptr);
    in_gap = in_vacated = nullptr;
    occupy_gap_and_vacated_range = true;
    auto *q = static_cast<unsigned char *>(hc_realloc(p, size + 8192));
    occupy_gap_and_vacated_range = false;
    ASSERT_NE(q, nullptr);
    EXPECT_TRUE(Marked(q, size)) << "copied, after the pages went back";
    ASSERT_NE(in_gap, nullptr) << "the gap was free for another mapping";
    ASSERT_NE(in_vacated, nullptr) << "so was the range the pages left";
    EXPECT_TRUE(StillTheirs(in_gap, in_gap_bytes)) << "the mapping in the gap was unmapped";
    EXPECT_TRUE(StillTheirs(in_vacated, in_vacated_bytes)) << "the mapping where the pages were was unmapped";
    munmap(in_gap, in_gap_bytes);
    munmap(in_vacated, in_vacated_bytes);
    hc_free(q);
}

}  // namespace
