// stage4_reclaim/thread_exit_test.cc — an exiting thread's cache comes back.
#include <gtest/gtest.h>
#include <limits.h>
#include <pthread.h>

#include <atomic>
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

using hc_test::ShortLivedThread;
using hc_test::Stats;

size_t LiveCaches() {
    tc_budget_stats b;
    tc_budget_snapshot(&b);
    return b.live_caches;
}

size_t ParkedCaches() {
    tc_budget_stats b;
    tc_budget_snapshot(&b);
    return b.parked_caches;
}


TEST(ThreadExit, ThousandShortLivedThreadsLeaveNothingCached) {
    hc_free_sized(hc_malloc(16), 16);  // the main thread's own cache exists
    size_t caches_before = LiveCaches();
    for (int i = 0; i < 100; i++) std::thread(ShortLivedThread, i).join();
    hc_stats after_100 = Stats();
    for (int i = 100; i < 1000; i++) std::thread(ShortLivedThread, i).join();
    hc_stats after_1000 = Stats();

    EXPECT_EQ(LiveCaches(), caches_before) << "every exited thread's cache was reclaimed or parked";
    // A parked cache (thread_exit.c) holds at most one ShortLivedThread's
    // 200 blocks of at most 2007 bytes.
    EXPECT_LT(after_1000.thread_cache_bytes, ((size_t)256 << 10) + ParkedCaches() * 200 * 2007)
        << "only the main thread's cache and the parked ones are left";
    EXPECT_LE(after_1000.os_mapped_bytes, after_100.os_mapped_bytes + after_100.os_mapped_bytes / 10)
        << "900 more threads did not grow the heap: their objects were reused";
    std::printf("thread churn on %s: mapped %zu KiB after 100 threads, %zu KiB after 1000; "
                "thread caches %zu bytes\n",
                hc_stage_name(), after_100.os_mapped_bytes >> 10, after_1000.os_mapped_bytes >> 10,
                after_1000.thread_cache_bytes);
}

// The first thread's objects stay in its list (200 of 4 KiB: under stage
// 2's cap of 1 MiB a list), its cache is parked as it exits, and the next
// new thread adopts it and hands them out again, every one. (Objects beyond
// what a list holds would go to the central cache's shard of the first
// thread's core, which a thread on another core does not take from: stage
// 3's shards.)
TEST(ThreadExit, ObjectsCachedByAnExitingThreadAreReused) {
    hc_release_free_memory();  // no cache parked: the first thread's is the one adopted
    const size_t size = 4096;
    std::vector<void *> first(200), second(200);
    std::thread([&] {
        for (auto &p : first) p = hc_malloc(size);
        for (void *p : first) hc_free_sized(p, size);  // now in this thread's cache
    }).join();
    hc_stats before = Stats();
    std::thread([&] {
        for (auto &p : second) p = hc_malloc(size);
    }).join();
    std::set<void *> freed(first.begin(), first.end());
    size_t reused = 0;
    for (void *p : second) reused += freed.count(p);
    EXPECT_EQ(reused, second.size()) << "the second thread got the first one's objects, in the cache it adopted";
    EXPECT_EQ(Stats().os_mapped_bytes, before.os_mapped_bytes) << "and the heap did not grow";
    for (void *p : second) hc_free_sized(p, size);
}

// A key created after the allocator's runs its destructor after ours (glibc
// runs them in key order); it allocates and frees into a thread whose cache
// is already gone.
pthread_key_t late_key;
std::atomic<int> late_destructor_ran{0};
void LateDestructor(void *) {
    void *p = hc_malloc(100);
    ASSERT_NE(p, nullptr);
    memset(p, 1, 100);
    hc_free_sized(p, 100);
    void *q = hc_malloc(5000);
    hc_free_sized(q, 5000);
    late_destructor_ran++;
}

TEST(ThreadExit, DestructorsThatRunAfterOursMayStillAllocate) {
    hc_free_sized(hc_malloc(16), 16);
    ASSERT_EQ(pthread_key_create(&late_key, LateDestructor), 0);
    size_t caches_before = LiveCaches();
    for (int i = 0; i < 50; i++)
        std::thread([] {
            hc_free_sized(hc_malloc(64), 64);
            pthread_setspecific(late_key, reinterpret_cast<void *>(1));
        }).join();
    EXPECT_EQ(late_destructor_ran.load(), 50);
    EXPECT_EQ(LiveCaches(), caches_before) << "no cache was recreated and left behind";
    pthread_key_delete(late_key);
}

// A thread whose first allocation happens in destructor round `round` of
// another key (PTHREAD_DESTRUCTOR_ITERATIONS rounds at most): the key's
// destructor re-arms itself until that round, then allocates.
pthread_key_t round_key;
std::atomic<int> rounds_allocated{0};
void AllocateInRound(void *remaining) {
    uintptr_t left = reinterpret_cast<uintptr_t>(remaining);
    if (left > 1) {
        pthread_setspecific(round_key, reinterpret_cast<void *>(left - 1));
        return;
    }
    void *p = hc_malloc(48);
    hc_free_sized(p, 48);
    rounds_allocated++;
}

TEST(ThreadExit, FirstMallocInAnyDestructorRoundLeavesNoCache) {
    hc_free_sized(hc_malloc(16), 16);  // the allocator's key exists before round_key
    ASSERT_EQ(pthread_key_create(&round_key, AllocateInRound), 0);
    size_t caches_before = LiveCaches();
    for (uintptr_t round = 1; round <= PTHREAD_DESTRUCTOR_ITERATIONS; round++) {
        rounds_allocated = 0;
        for (int i = 0; i < 20; i++)
            std::thread([round] { pthread_setspecific(round_key, reinterpret_cast<void *>(round)); })
                .join();
        EXPECT_EQ(rounds_allocated.load(), 20) << "round " << round;
        EXPECT_EQ(LiveCaches(), caches_before) << "first malloc in destructor round " << round;
    }
    pthread_key_delete(round_key);
}

TEST(ThreadExit, AThreadWhoseFirstCallIsAFreeGetsReclaimedToo) {
    void *p = hc_malloc(256);
    size_t caches_before = LiveCaches();
    std::thread([p] { hc_free_sized(p, 256); }).join();
    EXPECT_EQ(LiveCaches(), caches_before);
}

// More threads exit at once than may park (thread_exit.c): the rest give
// their caches back, and nothing is lost either way.
TEST(ThreadExit, ExitsBeyondTheParkingBoundGiveTheirCachesBack) {
    hc_free_sized(hc_malloc(16), 16);
    hc_release_free_memory();  // nothing parked: the bound is all free
    hc_stats before = Stats();
    const int kThreads = 12;
    std::mutex mutex;
    std::condition_variable cv;
    int ready = 0;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++)
        threads.emplace_back([&] {
            std::vector<void *> blocks;
            for (int i = 0; i < 100; i++) blocks.push_back(hc_malloc(4096));
            for (void *p : blocks) hc_free_sized(p, 4096);
            std::unique_lock<std::mutex> lock(mutex);
            ready++;
            cv.notify_all();
            cv.wait(lock, [&] { return ready == kThreads; });  // nobody is born after them
        });
    for (auto &t : threads) t.join();
    tc_budget_stats b;
    tc_budget_snapshot(&b);
    EXPECT_GE(b.parked_caches, 1u);
    EXPECT_LT(b.parked_caches, (size_t)kThreads) << "parking is bounded";
    hc_stats after = Stats();
    EXPECT_LE(after.bytes_in_use, before.bytes_in_use + 4096)
        << "every exited thread's objects are parked or back in the central cache";
    EXPECT_LE(after.thread_cache_bytes, before.thread_cache_bytes + b.parked_caches * ((size_t)1 << 20))
        << "only the parked caches still hold objects";
}

// The main thread's own exit is main_thread_exit_test.c: pthread_exit in
// the main thread unwinds through googletest's frames, so it is a plain C
// program of its own.

}  // namespace
