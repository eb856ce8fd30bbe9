// stage2_centralcache/thread_cache_test.cc — the thread cache's lists
// shrink: a list that keeps overflowing lowers its limit (ListTooLong), and
// the scavenge gives back what a list held without being asked for it.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

extern "C" {
#include "common/hcmalloc.h"
#include "stage1_threadcache/thread_cache.h"
#include "stage2_centralcache/central_cache.h"
}

namespace {

std::vector<void *> AllocateMany(size_t size, int n) {
    std::vector<void *> ptrs;
    for (int i = 0; i < n; i++) ptrs.push_back(hc_malloc(size));
    return ptrs;
}

void FreeAll(const std::vector<void *> &ptrs, size_t size) {
    for (void *p : ptrs) hc_free_sized(p, size);
}

// About a trip: one batch in stage 2, several from stage 3 (cc_trip_batches).
TEST(ThreadCacheLists, AThreadThatOnlyFreesEndsUpHoldingAboutATrip) {
    const size_t size = 64;
    const unsigned cls = sc_index(size);
    const uint32_t trip = cc_trip_batches(cls) * sc_batch(cls);
    // Enough that the consumer's limit, grown by a trip a refill, comes
    // back down a trip at a time: the longer the trip (stage 3's is
    // several batches), the more frees that takes.
    const int kProduced = 80000;
    std::vector<void *> produced = AllocateMany(size, kProduced);  // by this thread
    std::thread([&] {
        // The consumer first grows its own limit high (its refills), then
        // only frees what another thread allocated.
        FreeAll(AllocateMany(size, 5000), size);
        uint32_t grown = tc_current->lists[cls].max_length;
        FreeAll(produced, size);
        const hc_free_list &list = tc_current->lists[cls];
        EXPECT_GT(grown, 1000u);
        EXPECT_LE(list.max_length, trip + sc_batch(cls)) << "the limit shrank back";
        EXPECT_LE(fl_length(&list), trip + sc_batch(cls)) << "and it holds about a trip, not the cap";
        std::printf("limit %u after 5000 refilled mallocs, %u after %d frees; %u objects held\n",
                    grown, list.max_length, kProduced, fl_length(&list));
    }).join();
}

TEST(ThreadCacheLists, TheScavengeEmptiesAListThatStopsBeingUsed) {
    std::thread([] {
        // The busy class is above 1 KiB: stage 4 lets a list of smaller
        // blocks hold more than 2000 objects (budget.c), and then it would
        // never overflow, nor visit the slow path that scavenges.
        const size_t idle_size = 96, busy_size = 2048;
        const unsigned idle_cls = sc_index(idle_size);
        FreeAll(AllocateMany(idle_size, 2000), idle_size);
        uint32_t held = fl_length(&tc_current->lists[idle_cls]);
        EXPECT_GT(held, 1000u) << "the list kept what it was given back";
        // Hundreds of refills and overflows of another class (several
        // rounds of TC_SCAVENGE_PERIOD visits, even when each moves a trip
        // of several batches): each scavenge halves the list nobody takes from.
        for (int round = 0; round < 200; round++) FreeAll(AllocateMany(busy_size, 2000), busy_size);
        uint32_t left = fl_length(&tc_current->lists[idle_cls]);
        EXPECT_LT(left, held / 16) << "the idle list went back to the central cache";
        std::printf("idle list: %u objects, %u after 200 x 2000 mallocs and frees of another class\n", held, left);
    }).join();
}

}  // namespace
