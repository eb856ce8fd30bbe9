// stage3_pagecache/default_checks_test.cc — what a default build catches of
// a double free and of a wrong size given to hc_free_sized, and what it does
// not (docs/design.md, section 6). The debug build catches both at the call
// (tests/bad_input_test.cc, bad_input_debug_test); these tests skip there.
// Each test uses size classes no other test here touches, and runs its
// mistake in a forked child (EXPECT_DEATH / EXPECT_EXIT), so the corruption
// it causes stays there.
#include <gtest/gtest.h>
#include <string.h>
#include <unistd.h>

#include <thread>

#include "common/compiler.h"

extern "C" {
#include "common/hcmalloc.h"
#include "common/size_class.h"
}

namespace {

// --config=asan (.bazelrc) poisons free blocks (common/track.h).
#if defined(HC_ASAN) && HC_ASAN
constexpr bool kAsanBuild = true;
#else
constexpr bool kAsanBuild = false;
#endif

#define SKIP_IN_DEBUG_BUILDS() \
    if (HC_DEBUG) GTEST_SKIP() << "HC_DEBUG catches this at the call (bad_input_debug_test)"

// A list's limit starts at 0 and grows by one per refill (slow start), so a
// class's first frees go straight back to the central cache. These tests are
// about a mistake on a warm list, one with room: eight mallocs of the class
// (kept) leave its list holding 3 objects with a limit of 5.
void WarmUp(size_t size) {
    for (int i = 0; i < 8; i++)
        (void)hc_malloc(size);
}

constexpr const char *kCorruptBatch =
    "hcmalloc: free\\(\\): invalid pointer 0x[0-9a-f]+ \\(returned from a thread cache: .*double free.*wrong size";

// Caught: the wrongly sized object reaches the central cache before anyone
// allocates it again, and its span says it is of another class.
TEST(DefaultChecks, WrongSizeIsCaughtWhenItsBatchComesBack) {
    SKIP_IN_DEBUG_BUILDS();
    EXPECT_DEATH(
        {
            void *p = hc_malloc(64);
            hc_free_sized(p, 4096);
            hc_thread_flush();
        },
        kCorruptBatch);
}

// Not caught: the next malloc of the wrong class gets the object, 48 bytes
// promised as 4096. Writing them all would overflow into the neighbours.
TEST(DefaultChecks, WrongSizeMayBeHandedOutAsTheWrongClass) {
    SKIP_IN_DEBUG_BUILDS();
    EXPECT_EXIT(
        {
            WarmUp(3000);
            void *p = hc_malloc(48);
            hc_free_sized(p, 3000);
            void *q = hc_malloc(3000);
            _exit(q == p ? 0 : 1);
        },
        ::testing::ExitedWithCode(0), "");
}

// Caught at the call: free without a size finds free's tag on the block,
// which the free just before wrote (common/harden.h, stage3_pagecache/malloc.c).
TEST(DefaultChecks, DoubleFreeOfTheLastFreedBlockIsCaughtAtTheCall) {
    SKIP_IN_DEBUG_BUILDS();
    EXPECT_DEATH(
        {
            WarmUp(1280);
            void *p = hc_malloc(1280);
            hc_free(p);
            hc_free(p);
        },
        "hcmalloc: free\\(\\): double free detected of 0x[0-9a-f]+ \\(it is on this thread's free list");
}

// Caught: freed twice through the sized fast path, which has no compare to
// spare, the object is on its list twice (linked to itself), so when a flush
// cuts the list into a batch the chain is shorter than its count
// (free_list.h, fl_pop_range): no batch that lies leaves the thread.
TEST(DefaultChecks, DoubleFreeIsCaughtWhenItsListIsCut) {
    SKIP_IN_DEBUG_BUILDS();
    EXPECT_DEATH(
        {
            std::thread([] {
                WarmUp(768); /* a size in the list table: the sized fast path */
                void *p = hc_malloc(768);
                hc_free_sized(p, 768);
                hc_free_sized(p, 768);
                hc_thread_flush();
            }).join();
        },
        "hcmalloc: free\\(\\): double free detected of 0x[0-9a-f]+ \\(a thread's free list holds it");
}

// Caught at the call: a sized free above the list table (HC_TABLE_MAX_SIZE
// + 1 B and up, malloc.c's free_sized_beyond_table) compares the block with
// its list's head before it pushes, so freeing the block it just freed
// stops there.
TEST(DefaultChecks, SizedDoubleFreeAboveTheTableIsCaughtAtTheCall) {
    SKIP_IN_DEBUG_BUILDS();
    constexpr size_t kAboveTheTable = 6000;
    static_assert(kAboveTheTable > HC_TABLE_MAX_SIZE, "the size must miss the sized fast path");
    EXPECT_DEATH(
        {
            WarmUp(kAboveTheTable);
            void *p = hc_malloc(kAboveTheTable);
            hc_free_sized(p, kAboveTheTable);
            hc_free_sized(p, kAboveTheTable);
        },
        "hcmalloc: free\\(\\): double free detected of 0x[0-9a-f]+ \\(it is the last block this thread freed");
}

// Caught at the call too: with another free between the two, no compare
// with the list's head would see it (the list would link a -> b -> a, and
// the next mallocs return a, b and a: two owners of one block); the tag
// does. The sized path has no tag: the test above is its check.
TEST(DefaultChecks, DoubleFreeWithAnotherBetweenIsCaughtAtTheCall) {
    SKIP_IN_DEBUG_BUILDS();
    EXPECT_DEATH(
        {
            WarmUp(2048);
            void *a = hc_malloc(2048);
            void *b = hc_malloc(2048);
            hc_free(a);
            hc_free(b);
            hc_free(a);
        },
        "hcmalloc: free\\(\\): double free detected of 0x[0-9a-f]+ \\(it is on this thread's free list");
}

// Not a false alarm: a block that the program got back from malloc has
// no tag, whatever it held while free, even when it is reused at once and
// freed again without a write (the tag is cleared on every hand-out).
TEST(DefaultChecks, ABlockFreedMallocedAndFreedAgainIsNotADoubleFree) {
    SKIP_IN_DEBUG_BUILDS();
    EXPECT_EXIT(
        {
            for (size_t size : {16, 48, 1024, 2048, 60000}) {
                WarmUp(size);
                for (int i = 0; i < 1000; i++) {
                    void *p = hc_malloc(size);
                    hc_free(p);
                    void *q = hc_malloc(size); /* the same block, its tag cleared */
                    hc_free(q);
                }
            }
            _exit(0);
        },
        ::testing::ExitedWithCode(0), "");
}

// Not a false alarm either: a program that copies a freed block's words
// into live blocks (glibc's tst-tcfree3) gives them no tag, because the tag
// is the block's own address minus a constant (common/harden.h).
void FreeBlocksHoldingAFreedBlocksWords() {
    WarmUp(32);
    void *a = hc_malloc(32);
    void *b = hc_malloc(32);
    void *c = hc_malloc(100000);
    hc_free(a);
    memcpy(b, a, 32); /* a's link and tag, read after its free */
    memcpy(c, a, 32);
    hc_free(b);
    hc_free(c);
    _exit(0);
}

TEST(DefaultChecks, ACopyOfAFreedBlocksWordsIsNotATag) {
    SKIP_IN_DEBUG_BUILDS();
    if (kAsanBuild)
        GTEST_SKIP() << "it reads a freed block's words, which the ASan build poisons (common/track.h)";
    EXPECT_EXIT(FreeBlocksHoldingAFreedBlocksWords(), ::testing::ExitedWithCode(0), "");
}

}  // namespace
