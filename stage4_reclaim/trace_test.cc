// stage4_reclaim/trace_test.cc — the tier-traffic trace (common/trace.h) of
// stage 4 built with HC_TRACE_ENABLED=1: every malloc is a hit or a refill, every
// free a hit or an overflow, the time buckets add up to the totals, and the
// page cache's events show up where a known sequence must cause them.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

extern "C" {
#include "common/free_list.h"
#include "common/hcmalloc.h"
#include "common/size_class.h"
#include "common/trace.h"
#include "stage2_centralcache/central_cache.h"
#include "stage3_pagecache/page_cache.h"
#include "stage3_pagecache/transfer_cache.h"
}

#include "tests/test_util.h"

namespace {

struct Trace {
    std::vector<std::string> events;
    std::map<std::pair<int, unsigned>, uint64_t> totals;       // (event, class) -> count
    std::map<std::pair<int, unsigned>, uint64_t> bucket_sums;  // the same, added up over buckets
    unsigned buckets = 0;

    uint64_t Total(hc_trace_event e, unsigned cls) const {
        auto it = totals.find({(int)e, cls});
        return it == totals.end() ? 0 : it->second;
    }
};

Trace Write() {
    std::string text = hc_test::CaptureFd(hc_trace_write, "trace.txt");
    Trace t;
    std::istringstream lines(text);
    std::string line;
    std::getline(lines, line);
    EXPECT_EQ(line, "hcmalloc-trace 1");
    while (std::getline(lines, line)) {
        std::istringstream f(line);
        std::string kind;
        f >> kind;
        if (kind == "event") {
            std::string name;
            f >> name;
            t.events.push_back(name);
        } else if (kind == "buckets") {
            f >> t.buckets;
        } else if (kind == "total") {
            int e;
            unsigned cls;
            uint64_t n;
            f >> e >> cls >> n;
            t.totals[{e, cls}] = n;
        } else if (kind == "b") {
            unsigned b;
            int e;
            unsigned cls;
            uint64_t n;
            f >> b >> e >> cls >> n;
            EXPECT_LT(b, t.buckets);
            t.bucket_sums[{e, cls}] += n;
        }
    }
    return t;
}

TEST(Trace, EveryCallIsAHitOrAMissAndTheBucketsAddUp) {
    constexpr int kObjects = 10000;  // many refills, many flushes of the hit counters
    const unsigned cls = sc_index(32);
    std::vector<void *> blocks;
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < kObjects; i++) blocks.push_back(hc_malloc(32));
        for (void *p : blocks) hc_free(p);
        blocks.clear();
    }
    // Stage 4 lets this thread's list keep a whole round and more (budget.c's
    // tc_layer_list_bounds: its limit grows by a trip a refill); freeing
    // three rounds another thread allocated on top of it overflows.
    constexpr int kForeign = 3 * kObjects;
    std::thread([&] {
        for (int i = 0; i < kForeign; i++) blocks.push_back(hc_malloc(32));
        hc_trace_flush_hits(HC_TRACE_TC_ALLOC_HIT, cls);  // what its exit would leave out
    }).join();
    for (void *p : blocks) hc_free(p);
    blocks.clear();
    void *large = hc_malloc(1 << 20);  // a span of class 0 from the page cache
    ASSERT_NE(large, nullptr);
    hc_free(large);
    hc_thread_flush();
    hc_release_free_memory();

    Trace t = Write();
    ASSERT_EQ(t.events.size(), (size_t)HC_TRACE_EVENTS);
    EXPECT_EQ(t.events[HC_TRACE_TC_ALLOC_HIT], "tc_alloc_hit");
    EXPECT_EQ(t.events[HC_TRACE_PC_RELEASE], "pc_release");

    // Each malloc(32) either hit the thread cache or refilled it; each free
    // either stayed in it or overflowed it.
    EXPECT_EQ(t.Total(HC_TRACE_TC_ALLOC_HIT, cls) + t.Total(HC_TRACE_TC_REFILL, cls), 3u * kObjects + kForeign);
    EXPECT_EQ(t.Total(HC_TRACE_TC_FREE_HIT, cls) + t.Total(HC_TRACE_TC_OVERFLOW, cls), 3u * kObjects + kForeign);
    EXPECT_GT(t.Total(HC_TRACE_TC_ALLOC_HIT, cls), t.Total(HC_TRACE_TC_REFILL, cls));
    EXPECT_GE(t.Total(HC_TRACE_TC_OVERFLOW, cls), 1u);
    // The central cache saw those misses as batches, and carved spans for them.
    EXPECT_GE(t.Total(HC_TRACE_CC_FETCH, cls), t.Total(HC_TRACE_TC_REFILL, cls));
    EXPECT_GE(t.Total(HC_TRACE_CC_RETURN, cls), t.Total(HC_TRACE_TC_OVERFLOW, cls));
    EXPECT_GE(t.Total(HC_TRACE_SPAN_CARVE, cls), 1u);
    // The large block: a span of class 0 out and back, merged with its free
    // neighbour; the heap grew at least once; the release reached the OS.
    EXPECT_GE(t.Total(HC_TRACE_SPAN_CARVE, 0), 1u);
    EXPECT_GE(t.Total(HC_TRACE_SPAN_RETURN, 0), 1u);
    EXPECT_GE(t.Total(HC_TRACE_PC_SPLIT, 0), 1u);
    EXPECT_GE(t.Total(HC_TRACE_PC_MERGE, 0), 1u);
    EXPECT_GE(t.Total(HC_TRACE_PC_GROW, 0), 1u);
    EXPECT_GE(t.Total(HC_TRACE_PC_RELEASE, 0), 1u);

    // The time buckets hold every count, once.
    EXPECT_GE(t.buckets, 1u);
    EXPECT_EQ(t.bucket_sums, t.totals);
}

// The lock counts (tools/measure/scaling_counts.sh's table): a thread that finds a
// bucket lock held counts one wait, and every fetch and return of a batch
// took its class's lock at least once.
TEST(Trace, ABucketLockFoundHeldCountsAWait) {
    const unsigned cls = sc_index(2600);  // no other test here uses it
    const Trace before = Write();
    for (unsigned shard = 0; shard < CC_SHARDS; shard++)  // the class's lock in every shard: the new thread's too
        hc_lock_acquire(cc_shard_lock(shard, cls));
    std::thread other([] {
        void *p = hc_malloc(2600);  // a refill: the bucket lock, held
        hc_free(p);
        hc_thread_flush();
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (unsigned shard = 0; shard < CC_SHARDS; shard++) hc_lock_unlock(cc_shard_lock(shard, cls));
    other.join();
    const Trace t = Write();
    EXPECT_EQ(t.events[HC_TRACE_LOCK_TAKEN], "lock_taken");
    EXPECT_EQ(t.Total(HC_TRACE_LOCK_WAITED, cls) - before.Total(HC_TRACE_LOCK_WAITED, cls), 1u);
    EXPECT_GE(t.Total(HC_TRACE_LOCK_TAKEN, cls) - before.Total(HC_TRACE_LOCK_TAKEN, cls),
              t.Total(HC_TRACE_CC_FETCH, cls) + t.Total(HC_TRACE_CC_RETURN, cls) -
                  before.Total(HC_TRACE_CC_FETCH, cls) - before.Total(HC_TRACE_CC_RETURN, cls));
    EXPECT_GE(t.Total(HC_TRACE_LOCK_TAKEN, 0), 1u) << "the page cache's lock, for the class's span";
}

// A trip of several batches crosses the class lock once each way: given
// back as one chain, it is pushed under one hold; fetched whole, popped
// under one (stage 3's transfer cache, cc_trip_batches).
TEST(Trace, ATripOfBatchesTakesTheClassLockOnceEachWay) {
    const unsigned cls = sc_index(24);  // no other test here uses it
    const uint32_t rows = cc_trip_batches(cls), batch = sc_batch(cls), trip = rows * batch;
    ASSERT_GT(rows, 1u);
    void *first = nullptr, *last = nullptr;
    for (uint32_t r = 0; r < rows; r++) {  // one chain of a trip's objects
        void *f, *l;
        ASSERT_EQ(cc_fetch(cls, batch, &f, &l), batch);
        if (last != nullptr) fl_set_next(last, f);
        else first = f;
        last = l;
    }
    const Trace before = Write();
    cc_return(cls, first, last, trip);
    const Trace given = Write();
    EXPECT_EQ(given.Total(HC_TRACE_LOCK_TAKEN, cls) - before.Total(HC_TRACE_LOCK_TAKEN, cls), 1u)
        << "the trip given back under one hold";
    ASSERT_EQ(cc_fetch(cls, trip, &first, &last), trip) << "the trip, whole, from the transfer cache";
    const Trace fetched = Write();
    EXPECT_EQ(fetched.Total(HC_TRACE_LOCK_TAKEN, cls) - given.Total(HC_TRACE_LOCK_TAKEN, cls), 1u)
        << "and fetched under one";
    cc_return(cls, first, last, trip);
}

// Objects that go home to their spans (the transfer cache full) are given
// back under one hold of the class lock for up to CC_RETURN_RUNS runs, each
// run a span's objects already linked to each other (stage 3's
// cc_return_to_spans): a trip carved from a few spans goes home under one
// hold, and a chain that changes span at every object under a hold per
// CC_RETURN_RUNS objects. A hold per batch of objects took a trip's rows
// times as many for the first.
TEST(Trace, ObjectsGoHomeToTheirSpansUnderAHoldPerChunkOfRuns) {
    const unsigned cls = sc_index(64);  // no other test here uses it
    const uint32_t batch = sc_batch(cls), trip = cc_return_max(cls);
    const size_t filling = (size_t)cc_transfer_capacity(cls) * batch;  // a full transfer cache
    const size_t alternating = 4 * CC_RETURN_RUNS;                      // the second chain
    ASSERT_GT(trip, batch);
    std::vector<void *> objects;  // in chain order: carved spans, slot by slot
    while (objects.size() < filling + trip + 2 * alternating) {
        void *first, *last;
        const uint32_t got = cc_fetch(cls, batch, &first, &last);
        ASSERT_GT(got, 0u);
        void *o = first;
        for (uint32_t i = 0; i < got; i++, o = fl_next(o)) objects.push_back(o);
    }
    auto give_back = [&](const std::vector<void *> &chain) {
        for (size_t i = 0; i + 1 < chain.size(); i++) fl_set_next(chain[i], chain[i + 1]);
        cc_return(cls, chain.front(), chain.back(), (uint32_t)chain.size());
    };
    auto part = [&](size_t from, size_t n) {
        return std::vector<void *>(objects.begin() + from, objects.begin() + from + n);
    };
    auto holds_to_give_back = [&](const std::vector<void *> &chain) {
        const Trace before = Write();
        give_back(chain);
        return Write().Total(HC_TRACE_LOCK_TAKEN, cls) - before.Total(HC_TRACE_LOCK_TAKEN, cls);
    };
    for (size_t i = 0; i < filling; i += batch) give_back(part(i, batch));
    cc_bucket_census full;
    cc_get_bucket_census(cls, &full);
    ASSERT_EQ(full.batches, cc_transfer_capacity(cls)) << "the transfer cache is full";

    // A trip from a few spans, in slot order.
    const std::vector<void *> trip_chain = part(filling, trip);
    size_t runs = 1;
    for (size_t i = 1; i < trip; i++) runs += pc_span_of(trip_chain[i]) != pc_span_of(trip_chain[i - 1]);
    ASSERT_LT(runs, (size_t)CC_RETURN_RUNS) << "a trip of a few spans";
    EXPECT_EQ(holds_to_give_back(trip_chain), 1u) << "its " << runs << " runs under one hold";
    cc_bucket_census home;
    cc_get_bucket_census(cls, &home);
    EXPECT_EQ(home.span_free_objects - full.span_free_objects, trip) << "the trip went to its spans";

    // A chain that changes span at every object: each object a run.
    const std::vector<void *> rest = part(filling + trip, objects.size() - filling - trip);
    std::vector<void *> alternate, others;
    const hc_span *a = pc_span_of(rest.front()), *b = pc_span_of(rest.back());
    ASSERT_NE(a, b);
    size_t next_a = 0, next_b = rest.size();
    while (alternate.size() < alternating) {
        while (next_a < next_b && pc_span_of(rest[next_a]) != a) next_a++;
        while (next_b > next_a && pc_span_of(rest[next_b - 1]) != b) next_b--;
        ASSERT_LT(next_a + 1, next_b) << "two spans with enough objects each";
        alternate.push_back(rest[next_a++]);
        alternate.push_back(rest[--next_b]);
    }
    for (void *o : rest)
        if (std::find(alternate.begin(), alternate.end(), o) == alternate.end()) others.push_back(o);
    EXPECT_EQ(holds_to_give_back(alternate), alternating / CC_RETURN_RUNS) << "a hold per CC_RETURN_RUNS runs";
    give_back(others);
}

}  // namespace
