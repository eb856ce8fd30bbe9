// stage3_pagecache/debug_checks_test.cc — what a debug build (HC_DEBUG=1,
// `--config=debug`, or the :debug_test target) catches on top of a default
// build: a double free of a small object, and a wrong size given to
// hc_free_sized, at the call that does it.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

extern "C" {
#include "common/hcmalloc.h"
#include "common/size_class.h"
}

namespace {

#if HC_DEBUG

constexpr const char *kDoubleFree = "hcmalloc: free\\(\\): double free of 0x";
constexpr const char *kWrongSize = "hcmalloc: free_sized\\(\\): wrong size for the block at 0x";

// A neighbour stays allocated so the span (and its bits) stays in use: the
// second free finds a live span with the object's bit already clear.
TEST(DebugChecksDeathTest, DoubleFreeOfASmallObjectAborts) {
    void *keep = hc_malloc(64);
    void *p = hc_malloc(64);
    ASSERT_TRUE(keep && p);
    hc_free(p);
    EXPECT_DEATH(hc_free(p), kDoubleFree);
    EXPECT_DEATH(hc_free_sized(p, 64), kDoubleFree);
    constexpr size_t kAboveTheTable = 6000;
    static_assert(kAboveTheTable > HC_TABLE_MAX_SIZE, "the size must miss the sized fast path");
    void *q = hc_malloc(kAboveTheTable);
    void *keep2 = hc_malloc(kAboveTheTable);
    hc_free_sized(q, kAboveTheTable);
    EXPECT_DEATH(hc_free_sized(q, kAboveTheTable), kDoubleFree) << "a size above the table, same check";
    hc_free(keep);
    hc_free(keep2);
}

TEST(DebugChecksDeathTest, AWrongSizeToFreeSizedAborts) {
    void *p = hc_malloc(100);  // class 112
    ASSERT_NE(p, nullptr);
    EXPECT_DEATH(hc_free_sized(p, 200), kWrongSize);
    EXPECT_DEATH(hc_free_sized(p, 8), kWrongSize);
    EXPECT_DEATH(hc_free_sized(p, 5000), kWrongSize);
    hc_free_sized(p, 112);  // any size of the same class is right
    void *large = hc_malloc(1 << 20);
    ASSERT_NE(large, nullptr);
    EXPECT_DEATH(hc_free_sized(large, 3 << 20), kWrongSize);
    EXPECT_DEATH(hc_free_sized(large, 100), "hcmalloc: free")  // a small size for a large block
        << "caught as invalid or wrong size";
    hc_free_sized(large, 1 << 20);
}

TEST(DebugChecks, CorrectProgramsPassTheChecksAcrossThreads) {
    // Objects of one span allocated by one thread and freed by another, every
    // way of freeing: the per-object bits must never give a false alarm.
    std::vector<void *> objs;
    for (int i = 0; i < 20000; i++) objs.push_back(hc_malloc(24 + (i % 5) * 8));
    std::thread([&objs] {
        for (size_t i = 0; i < objs.size(); i++) {
            if (i % 2) hc_free(objs[i]);
            else hc_free_sized(objs[i], 24 + (i % 5) * 8);
        }
    }).join();
    for (int i = 0; i < 20000; i++) objs[i] = hc_malloc(24 + (i % 5) * 8);
    for (void *p : objs) hc_free(p);
}

#else

TEST(DebugChecks, NeedADebugBuild) {
    FAIL() << "debug_checks_test.cc tests HC_DEBUG checks: build it through the :debug_test "
              "target or with --config=debug";
}

#endif

}  // namespace
