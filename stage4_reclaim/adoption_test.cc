// stage4_reclaim/adoption_test.cc — an exiting thread's cache is parked
// whole and the next new thread adopts it (thread_exit.c): once, never by
// two threads, counted in the stats while parked, and given back when
// nobody takes it.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

extern "C" {
#include "common/hcmalloc.h"
#include "stage1_threadcache/thread_cache.h"
#include "stage4_reclaim/reclaim.h"
}
#include "tests/stats_util.h"

namespace {

using hc_test::Stats;

const size_t kSize = 4096;

tc_budget_stats Budget() {
    tc_budget_stats b;
    tc_budget_snapshot(&b);
    return b;
}

// Every parked cache given back, so each test starts with none; the main
// thread's own cache made first, or its next malloc would adopt one.
void NoneParked() {
    hc_free_sized(hc_malloc(16), 16);
    hc_release_free_memory();
    ASSERT_EQ(Budget().parked_caches, 0u);
}

// What a thread that cached `n` blocks of kSize left behind.
struct ExitedThread {
    tc_cache *cache;
    uint32_t cached;  // the class's list length at exit
    std::vector<void *> blocks;
};

ExitedThread RunAndExit(int n) {
    ExitedThread e;
    std::thread([&] {
        for (int i = 0; i < n; i++) e.blocks.push_back(hc_malloc(kSize));
        for (void *p : e.blocks) hc_free_sized(p, kSize);
        e.cache = tc_current;
        e.cached = fl_length(&tc_current->lists[sc_index(kSize)]);
    }).join();
    return e;
}

TEST(Adoption, ANewThreadTakesOverTheExitedThreadsListsWhole) {
    NoneParked();
    ExitedThread gone = RunAndExit(200);
    ASSERT_GT(gone.cached, 16u) << "the exiting thread had a list worth adopting";
    EXPECT_EQ(Budget().parked_caches, 1u);
    tc_cache *adopted = nullptr;
    uint32_t left = 0;
    void *p = nullptr;
    std::thread([&] {
        p = hc_malloc(kSize);
        adopted = tc_current;
        left = fl_length(&tc_current->lists[sc_index(kSize)]);
    }).join();
    EXPECT_EQ(adopted, gone.cache) << "the new thread adopted the parked record";
    EXPECT_EQ(left, gone.cached - 1) << "its first malloc was a hit on the adopted list";
    EXPECT_NE(std::find(gone.blocks.begin(), gone.blocks.end(), p), gone.blocks.end());
    hc_free_sized(p, kSize);
    EXPECT_EQ(Budget().parked_caches, 1u) << "the adopter exited and parked it again";
}

TEST(Adoption, AParkedCacheCountsAsThreadCacheBytesUntilGivenBack) {
    NoneParked();
    hc_stats before = Stats();
    ExitedThread gone = RunAndExit(200);
    hc_stats parked = Stats();
    EXPECT_GE(parked.thread_cache_bytes, before.thread_cache_bytes + gone.cached * kSize)
        << "a parked cache's objects are still thread-cache bytes";
    EXPECT_LE(parked.bytes_in_use, before.bytes_in_use + kSize) << "and not in use";
    hc_release_free_memory();
    hc_stats released = Stats();
    EXPECT_EQ(Budget().parked_caches, 0u);
    EXPECT_LE(released.thread_cache_bytes + gone.cached * kSize, parked.thread_cache_bytes)
        << "hc_release_free_memory gave the parked cache back";
    EXPECT_LE(released.bytes_in_use, before.bytes_in_use + kSize) << "none of it was lost";
}

// Threads born together while one cache is parked: at most one adopts it.
TEST(Adoption, ThreadsBornTogetherNeverShareACache) {
    NoneParked();
    for (int round = 0; round < 20; round++) {
        RunAndExit(50);
        const int kThreads = 6;
        std::mutex mutex;
        std::condition_variable cv;
        int ready = 0;
        std::vector<tc_cache *> caches(kThreads);
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; t++)
            threads.emplace_back([&, t] {
                hc_free_sized(hc_malloc(kSize), kSize);
                caches[t] = tc_current;
                std::unique_lock<std::mutex> lock(mutex);
                ready++;
                cv.notify_all();
                cv.wait(lock, [&] { return ready == kThreads; });  // all alive at once
            });
        for (auto &t : threads) t.join();
        EXPECT_EQ(std::set<tc_cache *>(caches.begin(), caches.end()).size(), (size_t)kThreads)
            << "round " << round << ": two live threads had one cache";
    }
}

// fork() while a cache is parked: the child's first new thread adopts it,
// whole (the registry lock was held across the fork).
TEST(Adoption, AForkedChildAdoptsTheParkedCache) {
    NoneParked();
    ExitedThread gone = RunAndExit(200);
    ASSERT_EQ(Budget().parked_caches, 1u);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        tc_cache *adopted = nullptr;
        uint32_t left = 0;
        std::thread([&] {
            hc_free_sized(hc_malloc(kSize), kSize);
            adopted = tc_current;
            left = fl_length(&tc_current->lists[sc_index(kSize)]);
        }).join();
        _exit(adopted == gone.cache && left == gone.cached ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "the child's new thread adopted the parked cache with its list whole";
}

}  // namespace
