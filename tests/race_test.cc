// tests/race_test.cc — calls that read or touch other threads' state while
// those threads allocate, for ThreadSanitizer (every stage's race_test_tsan).
// In a plain build they only check the figures are sane; under TSan any data
// race between them fails the test (halt_on_error=1).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <utility>
#include <vector>

#include "tests/stats_util.h"

extern "C" {
#include "common/hcmalloc.h"
}

namespace {

// hc_get_stats sums every thread's list lengths while their owners push and
// pop: the owners' stores and the reader's loads must be atomic (relaxed).
TEST(Race, StatsWhileOtherThreadsAllocate) {
    std::atomic<bool> stop{false};
    std::vector<std::thread> workers;
    for (int t = 0; t < 3; t++) {
        workers.emplace_back([&stop, t] {
            std::vector<std::pair<void *, size_t>> held;
            for (unsigned i = 0; i < 2000 || (!stop.load(std::memory_order_relaxed) && i < 200000); i++) {
                size_t size = 8 + (i * 37u + t * 101u) % 1500;
                held.emplace_back(hc_malloc(size), size);
                if (held.size() > 64) {
                    for (auto &[p, n] : held) hc_free_sized(p, n);
                    held.clear();
                }
            }
            for (auto &[p, n] : held) hc_free_sized(p, n);
        });
    }
    for (int i = 0; i < 200; i++) {
        hc_stats s = hc_test::Stats();
        EXPECT_LE(s.metadata_bytes, s.os_mapped_bytes);
    }
    stop.store(true);
    for (auto &w : workers) w.join();
}

// A thread with no cache yet (it points at the shared sentinel) may call
// hc_thread_flush: it must not write into the sentinel, which every such
// thread shares. Several at once, so TSan sees any write as a race.
TEST(Race, FlushOnThreadsWithoutACache) {
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; t++) threads.emplace_back([] { hc_thread_flush(); });
    for (auto &t : threads) t.join();
    void *p = hc_malloc(64);  // the sentinel still sends a new thread to the slow path
    ASSERT_NE(p, nullptr);
    std::thread([] {
        void *q = hc_malloc(64);
        ASSERT_NE(q, nullptr);
        hc_free_sized(q, 64);
    }).join();
    hc_free_sized(p, 64);
}

}  // namespace
