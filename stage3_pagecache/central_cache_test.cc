// stage3_pagecache/central_cache_test.cc — span reference counts: the
// central cache counts each span's objects out, and a span goes back to the
// page cache exactly when the last one comes home.
#include <errno.h>
#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "stage3_pagecache/page_cache_test_util.h"
#include "tests/lock_probe.h"

extern "C" {
#include "common/hcmalloc.h"
#include "common/os.h"
#include "stage2_centralcache/central_cache.h"
}

namespace {

// Fetches `n` objects of `cls` one call at a time (a call may bring fewer).
std::vector<void *> Fetch(unsigned cls, uint32_t n) {
    std::vector<void *> out;
    while (out.size() < n) {
        void *first, *last;
        uint32_t got = cc_fetch(cls, n - (uint32_t)out.size(), &first, &last);
        EXPECT_GE(got, 1u);
        if (got == 0) break;
        void *p = first;
        for (uint32_t i = 0; i < got; i++, p = *static_cast<void **>(p)) out.push_back(p);
    }
    return out;
}

void Return(unsigned cls, void *obj) { cc_return(cls, obj, obj, 1); }

// Each test uses a class no other test here touches: a fresh bucket.
TEST(SpanRefcount, CountsObjectsOutAndGivesTheSpanBackAtZero) {
    const unsigned cls = sc_index(3000);
    std::vector<void *> first = Fetch(cls, 1);
    ASSERT_EQ(first.size(), 1u);
    hc_span *span = pc_span_of(first[0]);
    ASSERT_NE(span, nullptr);
    ASSERT_EQ(span->state, SPAN_SMALL);
    ASSERT_EQ(span->size_class, cls);
    const uint32_t n = span->object_count;
    ASSERT_GE(n, 3u);
    EXPECT_EQ(span->objects_in_use, 1u);
    EXPECT_EQ(span->free_count, n - 1);

    std::vector<void *> rest = Fetch(cls, n - 1);
    for (void *p : rest) ASSERT_EQ(pc_span_of(p), span) << "the bucket empties one span first";
    EXPECT_EQ(span->objects_in_use, n);
    EXPECT_EQ(span->free_count, 0u);
    EXPECT_FALSE(span->in_bucket_list) << "a span with nothing free leaves the bucket's list";

    const pc_census before = Census();
    for (void *p : rest) Return(cls, p);
    EXPECT_EQ(span->objects_in_use, 1u);
    EXPECT_EQ(span->state, SPAN_SMALL) << "one object still out: the span stays";
    EXPECT_TRUE(span->in_bucket_list);
    EXPECT_EQ(Census().small_pages, before.small_pages);

    const uintptr_t page = span->start_page;
    const size_t pages = span->page_count;
    Return(cls, first[0]);
    EXPECT_EQ(pc_span_of(first[0]), nullptr) << "the last object home sends the span back";
    hc_span *now = pm_lookup(page);
    ASSERT_NE(now, nullptr);
    EXPECT_EQ(now->state, SPAN_FREE);
    EXPECT_EQ(Census().small_pages, before.small_pages - pages);
    EXPECT_PAGE_CACHE_CONSISTENT();
}

// The bug the count prevents: a span given back (and so reused, here for
// large blocks) while one of its objects is still with the program.
TEST(SpanRefcount, ASpanWithAnObjectOutIsNeverReused) {
    const unsigned cls = sc_index(5000);
    std::vector<void *> objs = Fetch(cls, 1);
    hc_span *span = pc_span_of(objs[0]);
    ASSERT_NE(span, nullptr);
    std::vector<void *> more = Fetch(cls, span->object_count - 1);
    objs.insert(objs.end(), more.begin(), more.end());
    void *held = objs.back();
    memset(held, 0x5a, sc_size(cls));
    for (size_t i = 0; i + 1 < objs.size(); i++) Return(cls, objs[i]);
    ASSERT_EQ(span->objects_in_use, 1u);

    // Take every free page the page cache has (and then some): none of it
    // may be the held object's.
    std::vector<hc_span *> taken;
    const size_t want = Census().free_pages + 64;
    for (size_t got = 0; got < want; got++) {
        hc_span *s = pc_alloc_span(1, 0);
        ASSERT_NE(s, nullptr);
        ASSERT_FALSE(span_covers(s, span_page_of(held))) << "a page with an object out was reused";
        memset(span_start(s), 0xa5, HC_PAGE_SIZE);
        taken.push_back(s);
    }
    for (size_t i = 0; i < sc_size(cls); i++)
        ASSERT_EQ(static_cast<unsigned char *>(held)[i], 0x5a) << "the held object was overwritten";
    for (hc_span *s : taken) pc_free_span(s);
    Return(cls, held);
    EXPECT_EQ(pc_span_of(held), nullptr);
    EXPECT_PAGE_CACHE_CONSISTENT();
}

TEST(SpanRefcount, CentralBytesCountFreeObjectsOnPartlyUsedSpans) {
    const unsigned cls = sc_index(700);
    hc_stats before;
    hc_get_stats(&before);
    std::vector<void *> objs = Fetch(cls, 10);
    hc_span *span = pc_span_of(objs[0]);
    ASSERT_NE(span, nullptr);
    hc_stats during;
    hc_get_stats(&during);
    EXPECT_EQ(during.central_cache_bytes - before.central_cache_bytes,
              (size_t)(span->object_count - 10) * sc_size(cls));
    for (void *p : objs) Return(cls, p);
    hc_stats after;
    hc_get_stats(&after);
    EXPECT_EQ(after.central_cache_bytes, before.central_cache_bytes) << "the span left with its objects";
}

TEST(SpanRefcountDeathTest, AnObjectReturnedToTheWrongClassAborts) {
    const unsigned cls = sc_index(1500);
    std::vector<void *> objs = Fetch(cls, 2);
    EXPECT_DEATH(Return(sc_index(1600), objs[0]), "hcmalloc: free\\(\\): invalid pointer 0x");
    EXPECT_DEATH(Return(cls, static_cast<char *>(objs[0]) + 16), "hcmalloc: free\\(\\): invalid pointer 0x");
    Return(cls, objs[0]);
    EXPECT_DEATH(Return(cls, objs[0]); Return(cls, objs[1]); Return(cls, objs[1]),
                 "hcmalloc: free\\(\\): invalid pointer 0x")
        << "a span whose count is already zero cannot take an object back";
    Return(cls, objs[1]);
}

std::atomic<int> held_lock_seen{0};
void CountHeldBucketLocks(size_t) { held_lock_seen += hc_test::HeldBucketLocks(); }

// The lock order of page_cache.h: the page cache (which maps from the OS
// under its lock) is never entered with a bucket lock held.
TEST(SpanRefcount, NoBucketLockIsHeldWhenThePageCacheGrows) {
    std::thread([] {
        os_set_map_observer(CountHeldBucketLocks);
        std::vector<std::pair<void *, size_t>> got;
        for (int round = 0; round < 3; round++)
            for (unsigned cls = 1; cls < HC_NUM_CLASSES; cls++)
                for (int i = 0; i < 40; i++) got.emplace_back(hc_malloc(sc_size(cls)), sc_size(cls));
        for (auto &[p, size] : got) hc_free_sized(p, size);
        hc_thread_flush();
        os_set_map_observer(nullptr);
    }).join();
    EXPECT_EQ(held_lock_seen.load(), 0);
}

}  // namespace
