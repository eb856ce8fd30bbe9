// stage4_reclaim/steal_test.cc — idle-only stealing (budget.c's header):
// a thread that needed budget in one of the last two sweeps keeps its
// spare; one idle for longer gives it up to the sweep. A reservation marks
// its thread busy (active_epoch); without that mark every thread looks idle
// to the sweep, busy ones lose the budget they are using, and no other test
// notices (the budget's sums stay right). Its own target: the rule is a
// group of its own on the grade sheet.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

extern "C" {
#include "common/hcmalloc.h"
#include "stage1_threadcache/thread_cache.h"
#include "stage4_reclaim/reclaim.h"
#include "stage4_reclaim/reclaim_cache.h"
}

namespace {

TEST(Steal, ASweepTakesSpareFromIdleThreadsOnly) {
    for (int i = 0; i < 5; i++) tc_budget_next_epoch();  // so an unmarked record looks old
    std::mutex mutex;
    std::condition_variable cv;
    tc_cache *busy = nullptr;
    bool done = false;
    std::thread owner([&] {
        // Lists grow past the floor (reservations), then drop (flush): the
        // capacity becomes spare, which this thread keeps.
        std::vector<void *> ptrs;
        for (int j = 0; j < 2000; j++) ptrs.push_back(hc_malloc(512));
        for (void *p : ptrs) hc_free_sized(p, 512);
        hc_thread_flush();
        std::unique_lock<std::mutex> lock(mutex);
        busy = tc_current;
        cv.notify_all();
        cv.wait(lock, [&] { return done; });
    });
    {
        std::unique_lock<std::mutex> lock(mutex);
        cv.wait(lock, [&] { return busy != nullptr; });
    }
    size_t spare = __atomic_load_n(&tc_ext(busy)->spare_bytes, __ATOMIC_RELAXED);
    ASSERT_GT(spare, 0u) << "a flushed thread keeps the budget it claimed as spare";
    EXPECT_EQ(tc_budget_take_idle_spare(busy, tc_budget_next_epoch()), 0u)
        << "the sweep right after its reservations took a busy thread's spare: does a "
           "reservation mark its thread (active_epoch) as needing budget now?";
    EXPECT_EQ(__atomic_load_n(&tc_ext(busy)->spare_bytes, __ATOMIC_RELAXED), spare);
    for (int i = 0; i < 2; i++) tc_budget_next_epoch();
    EXPECT_EQ(tc_budget_take_idle_spare(busy, tc_budget_next_epoch()), spare)
        << "three sweeps later the thread is idle: its spare goes to the sweep";
    {
        std::lock_guard<std::mutex> lock(mutex);
        done = true;
    }
    cv.notify_all();
    owner.join();
    tc_budget_stats after;
    tc_budget_snapshot(&after);
    EXPECT_LE(after.share_bytes + after.unclaimed_bytes, after.budget_bytes);
}

}  // namespace
