// stage4_reclaim/budget_test.cc — all thread caches together stay under
// HCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES (the BUILD sets it to 8 MiB here).
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

extern "C" {
#include "common/hcmalloc.h"
#include "stage4_reclaim/reclaim.h"
}

namespace {

TEST(Budget, SixtyFourCachingThreadsStayUnderTheBudget) {
    const int threads = 64;
    tc_budget_stats budget;
    tc_budget_snapshot(&budget);
    ASSERT_EQ(budget.budget_bytes, (size_t)8 << 20) << "set by the test's env in BUILD";

    std::mutex mutex;
    std::condition_variable cv;
    int cached = 0;
    bool done = false;
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; t++)
        pool.emplace_back([&, t] {
            // Each thread caches as much as it can: allocate a lot of several
            // classes, then free it all into its own cache.
            std::vector<std::pair<void *, size_t>> got;
            for (int round = 0; round < 4; round++) {
                for (int i = 0; i < 3000; i++) {
                    size_t size = 16 << ((t + i) % 8);  // 16 B .. 2 KiB
                    got.emplace_back(hc_malloc(size), size);
                }
                for (auto &[p, size] : got) hc_free_sized(p, size);
                got.clear();
            }
            std::unique_lock<std::mutex> lock(mutex);
            cached++;
            cv.notify_all();
            cv.wait(lock, [&] { return done; });  // stay alive, cache full
        });
    {
        std::unique_lock<std::mutex> lock(mutex);
        cv.wait(lock, [&] { return cached == threads; });
    }
    hc_stats stats;
    hc_get_stats(&stats);
    tc_budget_snapshot(&budget);
    EXPECT_LE(stats.thread_cache_bytes, budget.budget_bytes);
    EXPECT_LE(budget.capacity_bytes, budget.share_bytes);
    EXPECT_LE(budget.share_bytes + budget.unclaimed_bytes, budget.budget_bytes);
    EXPECT_GT(stats.thread_cache_bytes, budget.budget_bytes / 4) << "the threads did use the budget";
    std::printf("64 threads: %zu KiB cached, %zu KiB reserved, budget %zu KiB\n",
                stats.thread_cache_bytes >> 10, budget.capacity_bytes >> 10,
                budget.budget_bytes >> 10);
    {
        std::lock_guard<std::mutex> lock(mutex);
        done = true;
    }
    cv.notify_all();
    for (auto &t : pool) t.join();
    tc_budget_snapshot(&budget);
    EXPECT_EQ(budget.share_bytes + budget.unclaimed_bytes, budget.budget_bytes)
        << "exited threads gave their share back";
}

TEST(Budget, ABusyThreadTakesShareFromIdleOnes) {
    // 120 idle threads each take a starting share (64 KiB) and use almost
    // none of it, leaving well under 1 MiB of the 8 MiB budget unclaimed. A
    // busy thread must then grow past that by taking the idle threads' spare.
    const int idle = 120;
    std::mutex mutex;
    std::condition_variable cv;
    int started = 0;
    bool done = false;
    std::vector<std::thread> idlers;
    for (int i = 0; i < idle; i++)
        idlers.emplace_back([&] {
            hc_free_sized(hc_malloc(32), 32);
            std::unique_lock<std::mutex> lock(mutex);
            started++;
            cv.notify_all();
            cv.wait(lock, [&] { return done; });
        });
    {
        std::unique_lock<std::mutex> lock(mutex);
        cv.wait(lock, [&] { return started == idle; });
    }
    tc_budget_stats before;
    tc_budget_snapshot(&before);
    EXPECT_LT(before.unclaimed_bytes, (size_t)1 << 20);
    std::thread([&] {
        std::vector<void *> ptrs;
        for (int i = 0; i < 20000; i++) ptrs.push_back(hc_malloc(256));
        for (void *p : ptrs) hc_free_sized(p, 256);
        hc_stats stats;
        hc_get_stats(&stats);
        EXPECT_GT(stats.thread_cache_bytes, before.unclaimed_bytes + ((size_t)256 << 10))
            << "the busy thread cached more than the unclaimed budget: it took idle share";
        std::printf("busy thread cached %zu KiB with %zu KiB unclaimed at its start\n",
                    stats.thread_cache_bytes >> 10, before.unclaimed_bytes >> 10);
    }).join();
    tc_budget_stats after;
    tc_budget_snapshot(&after);
    EXPECT_LE(after.share_bytes + after.unclaimed_bytes, after.budget_bytes);
    {
        std::lock_guard<std::mutex> lock(mutex);
        done = true;
    }
    cv.notify_all();
    for (auto &t : idlers) t.join();
}

}  // namespace
