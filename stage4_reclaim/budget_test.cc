// stage4_reclaim/budget_test.cc — all thread caches together stay under
// HCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES (the BUILD sets it to 8 MiB here),
// plus each live thread's floor.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

extern "C" {
#include "common/hcmalloc.h"
#include "common/os.h"
#include "stage1_threadcache/thread_cache.h"
#include "stage4_reclaim/reclaim.h"
}

namespace {

// The invariants of reclaim.h, and what the caches hold against them.
void ExpectBudgetHolds(const char *when) {
    hc_stats stats;
    hc_get_stats(&stats);
    tc_budget_stats budget;
    tc_budget_snapshot(&budget);
    size_t floors = (budget.live_caches + budget.parked_caches) * budget.floor_bytes;  // reclaim.h
    EXPECT_LE(stats.thread_cache_bytes, budget.capacity_bytes) << when;
    EXPECT_LE(budget.capacity_bytes, budget.share_bytes + floors) << when;
    EXPECT_LE(budget.share_bytes + budget.unclaimed_bytes, budget.budget_bytes) << when;
    std::printf("%s: %zu live caches, %zu KiB cached, %zu KiB capacity, %zu KiB of the budget "
                "held, %zu KiB unclaimed, budget %zu KiB + floors %zu KiB\n",
                when, budget.live_caches, stats.thread_cache_bytes >> 10, budget.capacity_bytes >> 10,
                budget.share_bytes >> 10, budget.unclaimed_bytes >> 10, budget.budget_bytes >> 10,
                floors >> 10);
}

// `threads` threads that each cache as much as they can (allocate a lot of
// several classes, free it all into their own cache), then stay alive.
void CachingThreadsStayUnderTheBudget(int threads, int objects, const char *when) {
    std::mutex mutex;
    std::condition_variable cv;
    int cached = 0;
    bool done = false;
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; t++)
        pool.emplace_back([&, t] {
            std::vector<std::pair<void *, size_t>> got;
            for (int round = 0; round < 4; round++) {
                for (int i = 0; i < objects; i++) {
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
    ExpectBudgetHolds(when);
    tc_budget_stats budget;
    tc_budget_snapshot(&budget);
    EXPECT_GE(budget.live_caches, (size_t)threads);
    EXPECT_GT(budget.share_bytes + budget.unclaimed_bytes, budget.budget_bytes - budget.budget_bytes / 64)
        << "the budget is all accounted for: held or unclaimed";
    if (budget.unclaimed_bytes < budget.budget_bytes / 8)
        std::thread([] {
            // The budget is (nearly) all held: a new thread still caches,
            // within its floor.
            const size_t size = 64;
            std::vector<void *> ptrs;
            for (int i = 0; i < 100; i++) ptrs.push_back(hc_malloc(size));
            for (void *p : ptrs) hc_free_sized(p, size);
            EXPECT_GE(fl_length(&tc_current->lists[sc_index(size)]), 8u) << "the floor gives it a cache";
        }).join();
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

TEST(Budget, SixtyFourCachingThreadsStayUnderTheBudget) {
    tc_budget_stats budget;
    tc_budget_snapshot(&budget);
    ASSERT_EQ(budget.budget_bytes, (size_t)8 << 20) << "set by the test's env in BUILD";
    CachingThreadsStayUnderTheBudget(64, 3000, "64 threads");
}

TEST(Budget, AThousandLiveThreadsStayUnderTheBudget) {
    CachingThreadsStayUnderTheBudget(1000, 300, "1000 threads");
}

TEST(Budget, ABusyThreadTakesShareFromIdleOnes) {
    // 250 idle threads each claim budget (a cache above the floor), then
    // flush it: their limits drop and what they claimed stays with them as
    // spare (32 KiB each), leaving under 2 MiB of the 8 MiB budget
    // unclaimed. A busy thread must then grow past that by taking the idle
    // threads' spare.
    const int idle = 250;
    std::mutex mutex;
    std::condition_variable cv;
    int started = 0;
    bool done = false;
    std::vector<std::thread> idlers;
    for (int i = 0; i < idle; i++) {
        idlers.emplace_back([&] {
            std::vector<void *> ptrs;
            for (int j = 0; j < 1000; j++) ptrs.push_back(hc_malloc(512));
            for (void *p : ptrs) hc_free_sized(p, 512);
            hc_thread_flush();
            std::unique_lock<std::mutex> lock(mutex);
            started++;
            cv.notify_all();
            cv.wait(lock, [&] { return done; });
        });
        // One at a time, so none takes another's spare while it works.
        std::unique_lock<std::mutex> lock(mutex);
        cv.wait(lock, [&] { return started == i + 1; });
    }
    tc_budget_stats before;
    tc_budget_snapshot(&before);
    EXPECT_LE(before.unclaimed_bytes, before.budget_bytes / 4) << "the idle threads hold the budget";
    std::thread([&] {
        // Three classes, 1.25, 2.5 and 5 MiB of each: the lists' limits
        // grow as the refills come (the capacity), while the objects are out.
        std::vector<std::pair<void *, size_t>> ptrs;
        for (int i = 0; i < 15000; i++) {
            size_t size = (size_t)256 << (i % 3);
            ptrs.emplace_back(hc_malloc(size), size);
        }
        tc_budget_stats busy;
        tc_budget_snapshot(&busy);
        size_t grown = busy.capacity_bytes - before.capacity_bytes;
        EXPECT_GT(grown, before.unclaimed_bytes + busy.floor_bytes + ((size_t)512 << 10))
            << "the busy thread grew past the unclaimed budget: it took idle share";
        std::printf("busy thread's capacity grew by %zu KiB with %zu KiB unclaimed at its start\n",
                    grown >> 10, before.unclaimed_bytes >> 10);
        for (auto &[p, size] : ptrs) hc_free_sized(p, size);
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

tc_budget_stats Budget() {
    tc_budget_stats b;
    tc_budget_snapshot(&b);
    return b;
}

// Runs `rounds` rounds of a phase: `count` blocks of `size` allocated, then
// all freed into the thread's list.
void RunPhase(size_t size, size_t count, int rounds) {
    std::vector<void *> ptrs(count);
    for (int round = 0; round < rounds; round++) {
        for (void *&p : ptrs) p = hc_malloc(size);
        for (void *p : ptrs) hc_free_sized(p, size);
    }
}

// With the budget in place one list is not held to stage 2's cap (1 MiB of
// objects, TC_MAX_LIST_LENGTH of them): a thread that frees a phase of one
// class and allocates it again keeps the whole phase in its list, within
// the budget (budget.c's tc_layer_list_bounds). Under stage 2's cap all but
// 8192 of the phase's blocks would go to the central cache each round.
TEST(Budget, AListKeepsAPhaseLargerThanStageTwosCap) {
    std::thread([] {
        const size_t size = 128, phase = 20000;  // 2.5 MiB a phase, under the 8 MiB budget
        RunPhase(size, phase, 4);
        const hc_free_list *list = &tc_current->lists[sc_index(size)];
        EXPECT_GT(fl_length(list), 8192u) << "more than stage 2's cap stayed in the thread";
        EXPECT_GE(fl_length(list), phase / 2) << "the phase stayed in the thread";
        EXPECT_LE((size_t)list->max_length * size, Budget().budget_bytes + Budget().floor_bytes)
            << "the list's limit is within the budget";
        ExpectBudgetHolds("a thread keeping a 2.5 MiB phase");
    }).join();
}

// The phase over, the thread moves on to another class. The idle list comes
// back to stage 2's cap at the next scavenge, limit and all (stage 2's
// tc_note_slow_path), so the budget its limit was charged for goes to the
// class in use: here the second phase needs nearly all of the 8 MiB budget,
// which it cannot have while the first list keeps a 2.5 MiB limit.
TEST(Budget, AnIdleListGivesItsLimitBackToTheBudget) {
    hc_release_free_memory();  // no parked cache holds budget, and the thread adopts none
    std::thread([] {
        const size_t first = 128, second = 256;
        RunPhase(first, 20000, 4);  // 2.5 MiB
        const hc_free_list *idle = &tc_current->lists[sc_index(first)];
        ASSERT_GT(idle->max_length, 8192u) << "the first phase grew past stage 2's cap";
        RunPhase(second, 28000, 8);  // 7 MiB
        const hc_free_list *busy = &tc_current->lists[sc_index(second)];
        std::printf("after a 7 MiB phase of %zu B: the %zu B list's limit %u, the %zu B list holds %u\n", second,
                    first, idle->max_length, second, fl_length(busy));
        EXPECT_LE(idle->max_length, 8192u) << "the idle list's limit came back to stage 2's cap";
        EXPECT_GE(fl_length(busy), 26000u) << "and the class in use had the budget for its phase";
        ExpectBudgetHolds("a phase after another class's");
    }).join();
}

// The phase over, the thread moves on to big blocks, whose lists stay under
// stage 2's cap: few slow-path visits (far fewer than a scavenge period's),
// each mapping new memory. The idle list does not wait for the visits: once
// the memory mapped has grown by 1 MiB since its period began, the period
// ends (budget.c's tc_layer_period_ends) and the list comes back to stage
// 2's cap, its objects there for the spans the heap is growing for. In a
// process of its own (a death test, run "threadsafe": the binary again),
// whose page cache holds no free pages that the big blocks would take
// first. Returns 0, or which check failed.
int IdlePhaseComesBackToTheCapWhileTheHeapGrows() {
    int failed = 0;
    std::thread([&] {
        const size_t first = 128, big = 64 << 10;
        RunPhase(first, 20000, 4);  // 2.5 MiB
        const hc_free_list *idle = &tc_current->lists[sc_index(first)];
        if (fl_length(idle) <= 8192u) {
            failed = 2;
            return;
        }
        const size_t start = os_mapped_bytes();
        std::vector<void *> held;
        while (os_mapped_bytes() - start < ((size_t)2 << 20)) held.push_back(hc_malloc(big));
        if (held.size() >= 256u)
            failed = 3;  // as many visits as a period: the visits could have ended it
        else if (idle->max_length > 8192u || fl_length(idle) > 8192u)
            failed = 4;
        for (void *p : held) hc_free_sized(p, big);
    }).join();
    return failed;
}

TEST(BudgetDeathTest, AnIdlePhaseComesBackToTheCapWhileTheHeapGrows) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(exit(IdlePhaseComesBackToTheCapWhileTheHeapGrows()), testing::ExitedWithCode(0), "")
        << "exit 2: the phase did not grow past stage 2's cap; 3: the heap took 256 mallocs or more "
           "to grow by 2 MiB; 4: the idle list kept more than stage 2's cap";
}

// What this thread's lists of blocks above 1 KiB hold, but for classes
// `in_use` and `just_left`.
size_t IdleBigListBytes(unsigned in_use, unsigned just_left) {
    size_t bytes = 0;
    for (unsigned cls = sc_index(1025); cls < HC_NUM_CLASSES; cls++)
        if (cls != in_use && cls != just_left) bytes += (size_t)fl_length(&tc_current->lists[cls]) * sc_size(cls);
    return bytes;
}

// A thread that goes from size to size, as a string grown a byte at a time
// does (the bench's `strgrow`): 150 blocks move into each class from 1 KiB
// up to 16 KiB in turn, each new block allocated before its old one is
// freed. The lists the blocks left are idle; on stage 2's 256-visit period
// alone each kept up to 1 MiB until a scavenge found it so, and the lists
// older than the one just left held over 2 MiB at the worst step (with
// budget.c's idle check taken out, the test fails; the line it prints says
// by how much). Every 32 visits the thread's idle big lists are summed, and
// above 256 KiB the period ends (budget.c's tc_idle_big_bytes), so the
// older lists are halved a period at a time while the thread moves on.
TEST(Budget, IdleListsOfBigBlocksGiveBackWhileTheThreadMovesFromSizeToSize) {
    hc_release_free_memory();  // nothing parked: the thread starts with an empty cache of its own
    std::thread([] {
        std::vector<void *> blocks(150, nullptr);
        size_t most = 0, held_size = 0;
        for (unsigned cls = sc_index(1025); cls <= sc_index(16384); cls++) {
            const size_t size = sc_size(cls);
            for (void *&p : blocks) {
                void *moved = hc_malloc(size);
                hc_free_sized(p, held_size);
                p = moved;
            }
            held_size = size;
            most = std::max(most, IdleBigListBytes(cls, cls - 1));
        }
        for (void *p : blocks) hc_free_sized(p, held_size);
        std::printf("idle lists of big blocks held at most %zu KiB while 150 blocks moved from 1 KiB to 16 KiB\n",
                    most >> 10);
        EXPECT_LE(most, (size_t)2 << 20) << "the idle big lists gave back as the thread moved on";
    }).join();
}

// A thread that kept such a phase exits: its cache is parked for the next
// new thread, but trimmed to stage 2's cap first (thread_exit.c), so what
// the budget let one thread keep is not pinned after it is gone.
TEST(Budget, AParkedCacheKeepsNoMoreThanStageTwosCap) {
    hc_release_free_memory();  // nothing parked
    ASSERT_EQ(Budget().parked_caches, 0u);
    const size_t size = 128, phase = 20000;  // 2.5 MiB
    std::thread([&] {
        RunPhase(size, phase, 4);
        EXPECT_GT(fl_length(&tc_current->lists[sc_index(size)]), 8192u) << "the phase stayed while it ran";
    }).join();
    hc_stats stats;
    hc_get_stats(&stats);
    EXPECT_EQ(Budget().parked_caches, 1u);
    EXPECT_LE(stats.thread_cache_bytes, (size_t)1 << 20) << "the parked cache holds at most 1 MiB of the class";
    EXPECT_LE(Budget().capacity_bytes, ((size_t)1 << 20) + 2 * Budget().floor_bytes)
        << "and its limit came down with it: its capacity went back to the budget";
    std::printf("parked after a 2.5 MiB phase: %zu KiB in thread caches, %zu KiB capacity\n",
                stats.thread_cache_bytes >> 10, Budget().capacity_bytes >> 10);
    ExpectBudgetHolds("a parked cache after a 2.5 MiB phase");
}

// Caches as much as the budget lets it: 16 B .. 8 KiB, several rounds.
void CacheAll() {
    std::vector<std::pair<void *, size_t>> got;
    for (int round = 0; round < 8; round++) {
        for (int i = 0; i < 5000; i++) {
            size_t size = (size_t)16 << (i % 10);
            got.emplace_back(hc_malloc(size), size);
        }
        for (auto &[p, size] : got) hc_free_sized(p, size);
        got.clear();
    }
}

// A parked cache (thread_exit.c) keeps its share for a newborn; when a live
// thread runs short of budget, its steal sweep gives the parked cache back.
TEST(Budget, AStealSweepGivesBackAParkedCache) {
    hc_free_sized(hc_malloc(16), 16);
    hc_release_free_memory();  // nothing parked yet
    std::mutex mutex;
    std::condition_variable cv;
    int step = 0;
    auto wait_for = [&](int s) {
        std::unique_lock<std::mutex> lock(mutex);
        cv.wait(lock, [&] { return step >= s; });
    };
    auto go = [&](int s) {
        std::lock_guard<std::mutex> lock(mutex);
        step = s;
        cv.notify_all();
    };
    std::thread holder([&] {
        CacheAll();  // most of the budget
        go(1);
        wait_for(3);
    });
    size_t parked_before = 0, parked_after = 0;
    wait_for(1);
    std::thread busy([&] {
        hc_free_sized(hc_malloc(16), 16);  // born before the holder exits: adopts nothing
        go(2);
        wait_for(4);
        parked_before = Budget().parked_caches;
        CacheAll();  // wants what the parked cache holds
        parked_after = Budget().parked_caches;
    });
    wait_for(2);
    go(3);
    holder.join();
    go(4);
    busy.join();
    EXPECT_EQ(parked_before, 1u) << "the holder's cache was parked";
    EXPECT_EQ(parked_after, 0u) << "the busy thread's steal sweep gave it back";
}

}  // namespace
