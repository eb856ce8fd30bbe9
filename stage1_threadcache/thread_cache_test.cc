// stage1_threadcache/thread_cache_test.cc — layer 1 on its own.
#include <gtest/gtest.h>

#include <set>
#include <thread>
#include <vector>

extern "C" {
#include "common/hcmalloc.h"
#include "common/os.h"
#include "stage1_threadcache/thread_cache.h"
}

namespace {

TEST(ThreadCache, ANewThreadStartsOnTheSentinel) {
    std::thread([] {
        EXPECT_EQ(tc_current, &tc_sentinel);
        void *p = hc_malloc(24);
        ASSERT_NE(p, nullptr);
        EXPECT_NE(tc_current, &tc_sentinel) << "the first miss gives the thread a cache";
        hc_free_sized(p, 24);
    }).join();
    std::thread([] {
        // A thread whose first call is a free (of another thread's object).
        EXPECT_EQ(tc_current, &tc_sentinel);
    }).join();
    for (unsigned cls = 1; cls < HC_NUM_CLASSES; cls++) {
        EXPECT_EQ(tc_sentinel.lists[cls].head, nullptr) << "the sentinel is never written";
        EXPECT_EQ(tc_sentinel.lists[cls].max_length, 0u);
        EXPECT_EQ(tc_sentinel.lists[cls].room, 0u) << "full: every free misses";
    }
}

TEST(ThreadCache, TheFastPathFindsTheListOfTheRightClass) {
    tc_cache *tc = &tc_sentinel;
    for (size_t size = 1; size <= HC_TABLE_MAX_SIZE; size++)
        ASSERT_EQ(tc_list_small(tc, size), &tc->lists[sc_index(size)]) << "size " << size;
}

TEST(ThreadCache, FreeThenMallocReturnsTheSameObject) {
    void *p = hc_malloc(40);
    ASSERT_NE(p, nullptr);
    hc_free_sized(p, 40);
    EXPECT_EQ(hc_malloc(40), p) << "LIFO: the object just freed is the next one out";
    hc_free_sized(p, 40);
}

TEST(ThreadCache, RefillCarvesOneBatchOfNeighbours) {
    std::thread([] {
        const unsigned cls = sc_index(96);
        char *first = static_cast<char *>(hc_malloc(96));
        ASSERT_NE(first, nullptr);
        tc_cache *tc = tc_current;
        ASSERT_NE(tc, &tc_sentinel);
        EXPECT_EQ(fl_length(&tc->lists[cls]), sc_batch(cls) - 1) << "a refill brings one batch";
        for (unsigned i = 1; i < sc_batch(cls); i++) {
            char *next = static_cast<char *>(hc_malloc(96));
            EXPECT_EQ(next, first + i * 96) << "carved in address order";
        }
        EXPECT_EQ(fl_length(&tc->lists[cls]), 0u);
    }).join();
}

TEST(ThreadCache, EachThreadHasItsOwnCache) {
    tc_cache *caches[2] = {};
    void *objs[2] = {};
    for (int i = 0; i < 2; i++)
        std::thread([&, i] {
            objs[i] = hc_malloc(64);
            caches[i] = tc_current;
        }).join();
    EXPECT_NE(caches[0], &tc_sentinel);
    EXPECT_NE(caches[0], caches[1]);
    EXPECT_NE(objs[0], objs[1]);
}

TEST(ThreadCache, ListsHaveNoLimitInStage1) {
    std::thread([] {
        std::vector<void *> ptrs;
        for (int i = 0; i < 10000; i++) ptrs.push_back(hc_malloc(16));
        for (void *p : ptrs) hc_free_sized(p, 16);
        EXPECT_GE(fl_length(&tc_current->lists[sc_index(16)]), 10000u)
            << "stage 1 keeps every freed object in the thread";
    }).join();
}

TEST(ThreadCache, ObjectsFreedByAnotherThreadStayThere) {
    // The limit stage 2 removes: memory never returns to the thread that
    // allocated it, so a producer/consumer pair maps memory forever.
    std::vector<void *> ptrs;
    std::thread([&] {
        for (int i = 0; i < 1000; i++) ptrs.push_back(hc_malloc(128));
    }).join();
    size_t mapped = os_mapped_bytes();
    std::thread([&] {
        for (void *p : ptrs) hc_free_sized(p, 128);
        EXPECT_EQ(fl_length(&tc_current->lists[sc_index(128)]), 1000u);
    }).join();
    std::thread([&] {
        for (int i = 0; i < 1000; i++) hc_malloc(128);
    }).join();
    EXPECT_GT(os_mapped_bytes(), mapped) << "the second producer had to map new memory";
}

TEST(ThreadCache, LargeRequestsAreMappedAndUnmapped) {
    size_t before = os_mapped_bytes();
    void *p = hc_malloc(HC_MAX_SMALL_SIZE + 1);
    ASSERT_NE(p, nullptr);
    EXPECT_GE(os_mapped_bytes(), before + HC_MAX_SMALL_SIZE + 1);
    hc_free_sized(p, HC_MAX_SMALL_SIZE + 1);
    EXPECT_EQ(os_mapped_bytes(), before);
}

}  // namespace
