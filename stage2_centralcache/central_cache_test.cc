// stage2_centralcache/central_cache_test.cc — layer 2 on its own, and what
// it buys over stage 1.
#include <errno.h>
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

extern "C" {
#include "common/hcmalloc.h"
#include "common/os.h"
#include "stage1_threadcache/thread_cache.h"
#include "stage2_centralcache/central_cache.h"
}

#include "tests/lock_probe.h"

namespace {

size_t CentralBytes() {
    hc_stats s;
    hc_get_stats(&s);
    return s.central_cache_bytes;
}

TEST(CentralCache, SlowStartGrowsTheBatchOneByOneThenByBatches) {
    std::thread([] {
        const size_t size = 64;
        const unsigned cls = sc_index(size);
        const uint32_t batch = sc_batch(cls);
        ASSERT_EQ(batch, 32u);
        std::vector<uint32_t> limits;    // the list's limit after each refill
        std::vector<uint32_t> fetched;   // objects each refill brought
        for (int i = 0; i < 3000; i++) {
            bool empty = fl_length(&tc_current->lists[cls]) == 0;
            void *p = hc_malloc(size);
            ASSERT_NE(p, nullptr);
            if (empty) {
                limits.push_back(tc_current->lists[cls].max_length);
                fetched.push_back(fl_length(&tc_current->lists[cls]) + 1);
            }
        }
        ASSERT_GE(limits.size(), 40u);
        // The limit starts at 0: a class a thread never uses costs nothing.
        for (uint32_t i = 0; i < batch; i++) {
            EXPECT_EQ(limits[i], i + 1) << "refill " << i << ": +1 per refill below a batch";
            // A refill asks for the old limit (one object at 0); the bucket
            // may hand out fewer when a span runs out.
            EXPECT_LE(fetched[i], i > 0 ? i : 1) << "refill " << i;
        }
        EXPECT_EQ(limits[batch], 2 * batch) << "at a batch, the limit grows by a batch";
        EXPECT_EQ(limits[batch + 1], 3 * batch);
        for (size_t i = batch; i < fetched.size(); i++)
            EXPECT_LE(fetched[i], batch) << "a transfer never exceeds one batch";
    }).join();
}

TEST(CentralCache, ObjectsAreConserved) {
    const unsigned cls = sc_index(200);
    std::set<void *> seen;
    std::vector<std::pair<void *, void *>> chains;
    std::vector<uint32_t> counts;
    size_t central_before = CentralBytes();
    uint32_t total = 0;
    for (int i = 0; i < 50; i++) {
        void *first, *last;
        uint32_t n = cc_fetch(cls, 7, &first, &last);
        ASSERT_GE(n, 1u);
        ASSERT_LE(n, 7u);
        uint32_t walked = 0;
        for (void *p = first; p != nullptr; p = *static_cast<void **>(p)) {
            ASSERT_TRUE(seen.insert(p).second) << "object handed out twice";
            walked++;
            if (p == last) break;
        }
        ASSERT_EQ(walked, n);
        chains.emplace_back(first, last);
        counts.push_back(n);
        total += n;
    }
    size_t central_mid = CentralBytes();
    for (size_t i = 0; i < chains.size(); i++) cc_return(cls, chains[i].first, chains[i].second, counts[i]);
    EXPECT_EQ(CentralBytes(), central_mid + (size_t)total * sc_size(cls))
        << "everything returned is back in the bucket";
    (void)central_before;
    // Fetching them all again gives back exactly the same objects.
    std::set<void *> again;
    for (uint32_t got = 0; got < total;) {
        void *first, *last;
        uint32_t n = cc_fetch(cls, 7, &first, &last);
        void *p = first;
        for (uint32_t i = 0; i < n; i++, p = *static_cast<void **>(p)) again.insert(p);
        got += n;
    }
    for (void *p : seen) EXPECT_TRUE(again.count(p));
}

std::atomic<int> held_lock_seen{0};
void CheckNoBucketLockHeld(size_t) { held_lock_seen += hc_test::HeldBucketLocks(); }

TEST(CentralCache, NoBucketLockIsHeldAcrossACallIntoTheOS) {
    // Single-threaded: a lock found busy can only be held by this thread.
    std::thread([] {
        os_set_map_observer(CheckNoBucketLockHeld);
        std::vector<std::pair<void *, size_t>> got;
        for (unsigned cls = 1; cls < HC_NUM_CLASSES; cls++)
            for (int i = 0; i < 40; i++) got.emplace_back(hc_malloc(sc_size(cls)), sc_size(cls));
        os_set_map_observer(nullptr);
        for (auto &[p, size] : got) hc_free_sized(p, size);
    }).join();
    EXPECT_EQ(held_lock_seen.load(), 0);
}

TEST(CentralCache, AFullListGivesABatchBack) {
    std::thread([] {
        const size_t size = 32;
        const unsigned cls = sc_index(size);
        std::vector<void *> ptrs;
        for (int i = 0; i < 20000; i++) ptrs.push_back(hc_malloc(size));
        size_t central_before = CentralBytes();
        for (void *p : ptrs) hc_free_sized(p, size);
        const hc_free_list &list = tc_current->lists[cls];
        EXPECT_LE(fl_length(&list), list.max_length);
        EXPECT_LE(list.max_length, 8192u) << "the cap";
        EXPECT_GT(CentralBytes(), central_before) << "the overflow went to the central cache";
        hc_thread_flush();
        EXPECT_EQ(fl_length(&list), 0u) << "flush empties the lists";
    }).join();
}

TEST(CentralCache, MemoryFreedByAnotherThreadIsReused) {
    // What stage 1 could not do (see stage1's ObjectsFreedByAnotherThreadStayThere).
    const size_t size = 128;
    const int n = 5000;
    std::vector<void *> ptrs;
    std::thread producer([&] {
        for (int i = 0; i < n; i++) ptrs.push_back(hc_malloc(size));
    });
    producer.join();
    std::thread([&] {
        for (void *p : ptrs) hc_free_sized(p, size);
        hc_thread_flush();  // stage 4 does this when the thread exits
    }).join();
    hc_stats before;
    hc_get_stats(&before);
    std::thread([&] {
        for (int i = 0; i < n; i++) ptrs[i] = hc_malloc(size);
    }).join();
    hc_stats after;
    hc_get_stats(&after);
    EXPECT_EQ(after.os_mapped_bytes, before.os_mapped_bytes)
        << "the second round reused the freed objects: nothing new mapped";
    for (void *p : ptrs) hc_free_sized(p, size);
}

TEST(CentralCache, BucketsDoNotShareCacheLines) {
    for (unsigned cls = 2; cls < HC_NUM_CLASSES; cls++) {
        uintptr_t a = reinterpret_cast<uintptr_t>(cc_bucket_lock(cls - 1));
        uintptr_t b = reinterpret_cast<uintptr_t>(cc_bucket_lock(cls));
        EXPECT_EQ(a % HC_CACHE_LINE, 0u);
        EXPECT_GE(b - a, (uintptr_t)HC_CACHE_LINE);
    }
}

// The span race, met every time: while this thread's cc_fetch maps a span
// (the bucket lock unlocked), another thread fetches the same class,
// maps its own and installs it first. The loser must cut its batch from
// the winner's span and unmap its own: that race is not running out of
// memory.
std::atomic<bool> race_armed{false};
unsigned race_cls;
void *race_winner_first;

void WinTheSpanRace(size_t) {
    if (!race_armed.exchange(false)) return;  // the winner's own map, or a later one
    std::thread([] {
        void *last;
        ASSERT_GT(cc_fetch(race_cls, 1, &race_winner_first, &last), 0u);
    }).join();
}

TEST(CentralCache, AFetchThatLosesTheSpanRaceCutsFromTheWinnersSpan) {
    race_cls = sc_index(1024);
    const size_t span_bytes = sc_span_pages(race_cls) << HC_PAGE_SHIFT;
    ASSERT_GE(span_bytes / sc_size(race_cls), 2u) << "the winner's span must have objects left";
    std::vector<void *> held;
    os_set_map_observer(WinTheSpanRace);
    bool raced = false;
    // Whatever earlier cases gave the bucket is fetched first; then its span runs out.
    for (int i = 0; i < 100000 && !raced; i++) {
        hc_stats before;
        hc_get_stats(&before);
        race_armed = true;
        void *first = nullptr, *last = nullptr;
        errno = 0;
        uint32_t got = cc_fetch(race_cls, 1, &first, &last);
        raced = !race_armed.exchange(false);  // this fetch mapped: the observer ran the race
        if (raced) {
            ASSERT_GT(got, 0u) << "the fetch that lost the span race returned nothing (errno "
                               << errno << "): another thread's span is there to cut from";
            EXPECT_NE(first, race_winner_first) << "an object handed out twice";
            hc_stats after;
            hc_get_stats(&after);
            EXPECT_EQ(after.os_mapped_bytes - before.os_mapped_bytes, span_bytes)
                << "two spans mapped, one installed: the loser's goes back to the OS";
            held.push_back(race_winner_first);
        }
        if (got > 0) held.push_back(first);
    }
    os_set_map_observer(nullptr);
    ASSERT_TRUE(raced) << "no fetch mapped a span: the race never ran";
    for (void *p : held) {
        fl_set_next(p, nullptr);
        cc_return(race_cls, p, p, 1);
    }
}

}  // namespace
