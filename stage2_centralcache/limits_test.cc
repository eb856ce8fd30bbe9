// stage2_centralcache/limits_test.cc — the rules every list-limit policy of
// lab 2 must keep, whatever batch and growth the student chooses (the
// reference's exact policy is central_cache_test's SlowStart test):
//   - a thread that only frees grows its list's limit: otherwise each free
//     past the first goes to the central cache and takes its lock;
//   - an overflow gives back one batch, or what is over the limit if that is
//     more, and keeps the rest: returning the whole list throws away the
//     objects the thread is about to reuse;
//   - a list never passes its limit, and its limit never passes the cap
//     (TC_MAX_LIST_LENGTH);
//   - every object a refill or an overflow moves is one the program can use
//     again (nothing lost between the layers);
//   - a refill hands one object to the program and keeps the rest: the one
//     it returns is not also in the list (it would be handed out twice).
#include <gtest/gtest.h>

#include <set>
#include <thread>
#include <vector>

extern "C" {
#include "common/hcmalloc.h"
#include "stage1_threadcache/thread_cache.h"
}

namespace {

constexpr size_t kSize = 64;
constexpr uint32_t kCap = 8192;  // TC_MAX_LIST_LENGTH (stage2_centralcache/thread_cache_hooks.h)

// Objects allocated by a thread that then exits without freeing them.
std::vector<void *> AllocatedElsewhere(size_t n) {
    std::vector<void *> ptrs;
    std::thread([&] {
        for (size_t i = 0; i < n; i++) ptrs.push_back(hc_malloc(kSize));
    }).join();
    for (void *p : ptrs) EXPECT_NE(p, nullptr);
    return ptrs;
}

TEST(ListLimits, AThreadThatOnlyFreesGrowsItsLimit) {
    const unsigned cls = sc_index(kSize);
    std::vector<void *> ptrs = AllocatedElsewhere(20 * sc_batch(cls));
    std::thread([&] {
        for (void *p : ptrs) hc_free_sized(p, kSize);
        const hc_free_list &list = tc_current->lists[cls];
        EXPECT_GE(list.max_length, sc_batch(cls))
            << "after " << ptrs.size() << " frees the limit is still " << list.max_length
            << ": every free past it goes to the central cache";
        hc_thread_flush();
    }).join();
}

TEST(ListLimits, AnOverflowGivesBackABatchOrTheExcessAndKeepsTheRest) {
    const unsigned cls = sc_index(kSize);
    const uint32_t batch = sc_batch(cls);
    std::vector<void *> ptrs = AllocatedElsewhere(50 * batch);
    std::thread([&] {
        int overflows = 0;
        for (void *p : ptrs) {
            // tc_current changes on the first free (the sentinel's lists are empty).
            uint32_t before = fl_length(&tc_current->lists[cls]);
            hc_free_sized(p, kSize);
            const hc_free_list &now = tc_current->lists[cls];
            ASSERT_LE(fl_length(&now), now.max_length) << "a list past its limit";
            ASSERT_LE(now.max_length, kCap) << "a limit past the cap";
            if (fl_length(&now) < before + 1) {
                overflows++;
                uint32_t returned = before + 1 - fl_length(&now);
                // What was over a (possibly lowered) limit, or else one batch.
                uint32_t over = before + 1 > now.max_length ? before + 1 - now.max_length : 0;
                ASSERT_LE(returned, over > batch ? over : batch)
                    << "an overflow gave back " << returned << " objects: more than a batch and more than the excess";
                if (before + 1 > batch) {
                    ASSERT_GT(fl_length(&now), 0u) << "an overflow emptied a list of " << before + 1;
                }
            }
        }
        EXPECT_GT(overflows, 0) << "50 batches freed and no overflow: is there a limit?";
        hc_thread_flush();
    }).join();
}

TEST(ListLimits, ObjectsMovedBetweenLayersComeBack) {
    // Free from one thread, flush, allocate the same number in another:
    // with nothing mapped in between, each object comes back exactly once.
    const unsigned cls = sc_index(kSize);
    std::vector<void *> ptrs = AllocatedElsewhere(30 * sc_batch(cls) + 7);
    std::set<void *> freed(ptrs.begin(), ptrs.end());
    ASSERT_EQ(freed.size(), ptrs.size());
    std::thread([&] {
        for (void *p : ptrs) hc_free_sized(p, kSize);
        hc_thread_flush();
    }).join();
    hc_stats before, after;
    hc_get_stats(&before);
    std::thread([&] {
        std::set<void *> again;
        for (size_t i = 0; i < ptrs.size(); i++) {
            void *p = hc_malloc(kSize);
            ASSERT_NE(p, nullptr);
            EXPECT_TRUE(again.insert(p).second) << "handed out twice: " << p;
        }
        for (void *p : again) hc_free_sized(p, kSize);
        hc_thread_flush();
    }).join();
    hc_get_stats(&after);
    EXPECT_EQ(after.os_mapped_bytes, before.os_mapped_bytes)
        << "the freed objects were enough: none should have been lost on the way";
}

TEST(ListLimits, ARefillKeepsInItsListOnlyWhatItDidNotReturn) {
    std::thread([] {
        const unsigned cls = sc_index(kSize);
        int refills = 0;
        std::vector<void *> got;
        for (int i = 0; i < 4000; i++) {
            bool empty = fl_length(&tc_current->lists[cls]) == 0;
            void *p = hc_malloc(kSize);
            ASSERT_NE(p, nullptr);
            got.push_back(p);
            if (!empty) continue;
            refills++;
            const hc_free_list &list = tc_current->lists[cls];
            std::set<void *> kept;
            void *obj = list.head;
            for (uint32_t k = 0; k < fl_length(&list); k++, obj = fl_next(obj)) {
                ASSERT_NE(obj, p) << "refill " << refills << ": the object it returned is also in the "
                                  << "list it refilled (of " << fl_length(&list) << "): handed out twice";
                ASSERT_TRUE(kept.insert(obj).second) << "refill " << refills << ": the list holds " << obj
                                                     << " twice";
            }
            ASSERT_LE(fl_length(&list), list.max_length) << "refill " << refills << ": past the limit";
        }
        EXPECT_GT(refills, 10);
        for (void *p : got) hc_free_sized(p, kSize);
        hc_thread_flush();
    }).join();
}

}  // namespace
