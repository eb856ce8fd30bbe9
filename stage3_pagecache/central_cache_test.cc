// stage3_pagecache/central_cache_test.cc — span reference counts: the
// central cache counts each span's objects out, and a span goes back to the
// page cache only when the last one comes home (after waiting as its
// class's spare); the transfer cache passes whole batches on intact and
// loses no object; each thread's shard keeps its objects; the page map says
// each page's class.
#include <errno.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "stage3_pagecache/page_cache_test_util.h"
#include "tests/lock_probe.h"

extern "C" {
#include "common/hcmalloc.h"
#include "common/os.h"
#include "stage1_threadcache/thread_cache.h"
#include "stage2_centralcache/central_cache.h"
#include "stage3_pagecache/central_cache_internal.h"
#include "stage3_pagecache/page_policy.h"
#include "stage3_pagecache/transfer_cache.h"
}

namespace {

void Return(unsigned cls, void *obj) { cc_return(cls, obj, obj, 1); }

// Fetches `n` objects of `cls` one call at a time (a call may bring fewer,
// or, cutting never-used memory, up to a cache line's worth more: the
// surplus goes back).
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
    for (; out.size() > n; out.pop_back()) Return(cls, out.back());
    return out;
}

cc_bucket_census Bucket(unsigned cls) {
    cc_bucket_census c;
    cc_get_bucket_census(cls, &c);
    return c;
}

// Links `objs` into one chain, in order, and returns it as a batch.
void ReturnChain(unsigned cls, const std::vector<void *> &objs) {
    for (size_t i = 0; i + 1 < objs.size(); i++) *static_cast<void **>(objs[i]) = objs[i + 1];
    cc_return(cls, objs.front(), objs.back(), (uint32_t)objs.size());
}

// The chain cc_fetch hands out, as a vector (checks it is NULL-terminated).
std::vector<void *> FetchChain(unsigned cls, uint32_t want) {
    void *first, *last;
    uint32_t got = cc_fetch(cls, want, &first, &last);
    std::vector<void *> out;
    void *p = first;
    for (uint32_t i = 0; i < got; i++, p = *static_cast<void **>(p)) out.push_back(p);
    EXPECT_EQ(p, nullptr) << "the chain ends in NULL";
    if (got > 0) {
        EXPECT_EQ(out.back(), last);
    }
    return out;
}

// Each test uses a class no other test here touches: a fresh bucket.
TEST(SpanRefcount, CountsObjectsOutAndGivesTheSpanBackAtZero) {
    const unsigned cls = sc_index(3000);
    cc_give_back_cached();  // no other class holds a spare span: page counts below are exact
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
    EXPECT_EQ(pm_class_of(first[0]), cls) << "the bucket wrote its class into the page map";
    Return(cls, first[0]);
    EXPECT_EQ(pc_span_of(first[0]), span) << "the last object home: the span waits as the class's spare";
    EXPECT_EQ(span->objects_in_use, 0u);
    EXPECT_EQ(Bucket(cls).empty_spans, 1u);
    EXPECT_EQ(Census().small_pages, before.small_pages);
    cc_give_back_cached();
    EXPECT_EQ(pc_span_of(first[0]), nullptr) << "given back: the span went back to the page cache";
    EXPECT_EQ(pm_class_of(first[0]), 0u) << "and its pages no longer say class " << cls;
    EXPECT_EQ(Bucket(cls).empty_spans, 0u);
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
    cc_give_back_cached();
    EXPECT_EQ(pc_span_of(held), nullptr);
    EXPECT_PAGE_CACHE_CONSISTENT();
}

TEST(SpanRefcount, CentralBytesCountFreeObjectsOnPartlyUsedSpans) {
    const unsigned cls = sc_index(700);
    cc_give_back_cached();
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
    EXPECT_EQ(after.central_cache_bytes - before.central_cache_bytes, (size_t)span->object_count * sc_size(cls))
        << "the spare span's objects are free central bytes";
    cc_give_back_cached();
    hc_get_stats(&after);
    EXPECT_EQ(after.central_cache_bytes, before.central_cache_bytes) << "the span left with its objects";
}

// Empty spans wait in their bucket up to cc_spares_kept (CC_EMPTY_BYTES_KEPT
// of them): the first one past the bound goes back to the page cache at once.
TEST(SpanRefcount, EmptySpansWaitUpToTheByteBoundTheNextGoesBack) {
    const unsigned cls = sc_index(1000);
    const size_t span_bytes = sc_span_pages(cls) << HC_PAGE_SHIFT;
    const size_t kept = cc_spares_kept(cls);
    ASSERT_GT(kept, 1u) << "a class of small objects keeps more than one";
    EXPECT_LE(kept * span_bytes, CC_EMPTY_BYTES_KEPT);
    EXPECT_GT((kept + 1) * span_bytes, CC_EMPTY_BYTES_KEPT) << "as many as fit in the bound";
    // kept + 1 spans, every object out; then home, span by span.
    std::vector<std::vector<void *>> by_span;
    std::vector<void *> all = Fetch(cls, 1);
    const uint32_t per_span = pc_span_of(all[0])->object_count;
    std::vector<void *> more = Fetch(cls, (uint32_t)((kept + 1) * per_span - 1));
    all.insert(all.end(), more.begin(), more.end());
    std::vector<hc_span *> spans;
    for (void *p : all)
        if (std::find(spans.begin(), spans.end(), pc_span_of(p)) == spans.end()) spans.push_back(pc_span_of(p));
    ASSERT_EQ(spans.size(), kept + 1);
    for (size_t i = 0; i < spans.size(); i++) {
        for (void *p : all)
            if (pc_span_of(p) == spans[i]) Return(cls, p);
        if (i < kept) {
            EXPECT_EQ(spans[i]->state, SPAN_SMALL) << "spare " << i << " waits";
            EXPECT_EQ(Bucket(cls).empty_spans, i + 1);
        }
    }
    EXPECT_EQ(Bucket(cls).empty_spans, kept) << "the one past the bound went back";
    EXPECT_EQ(Bucket(cls).span_bytes, kept * span_bytes);
    std::vector<void *> again = Fetch(cls, 1);
    EXPECT_EQ(pc_span_of(again[0]), spans[kept - 1])
        << "the spare that emptied last is used again first, before a new span is carved";
    EXPECT_EQ(Bucket(cls).empty_spans, kept - 1);
    Return(cls, again[0]);
    cc_give_back_cached();
    EXPECT_EQ(Bucket(cls).empty_spans, 0u);
    EXPECT_PAGE_CACHE_CONSISTENT();
}

// Every object of `spans` spans of class `cls` (and maybe a few of a span
// partly used already), handed out.
std::vector<void *> FetchSpans(unsigned cls, size_t spans) {
    std::vector<void *> all = Fetch(cls, 1);
    const uint32_t per_span = pc_span_of(all[0])->object_count;
    std::vector<void *> more = Fetch(cls, (uint32_t)(spans * per_span - 1));
    all.insert(all.end(), more.begin(), more.end());
    return all;
}

// Beyond each class's first spare, all classes' spares together stay within
// CC_SPARE_BYTES_TOTAL: classes that each fill their own bound
// (cc_spares_kept) leave the last ones fewer, and its first still waits.
TEST(SpanRefcount, SparesBeyondEachClasssFirstStayWithinOneTotal) {
    const unsigned classes[] = {sc_index(1000), sc_index(900), sc_index(800)};
    size_t own_bounds_beyond_first = 0;
    for (unsigned cls : classes)
        own_bounds_beyond_first += (cc_spares_kept(cls) - 1) * (sc_span_pages(cls) << HC_PAGE_SHIFT);
    ASSERT_GT(own_bounds_beyond_first, CC_SPARE_BYTES_TOTAL) << "the classes' own bounds overshoot the total";
    ASSERT_NE(classes[0], classes[1]);
    ASSERT_NE(classes[1], classes[2]);
    cc_give_back_cached();
    ASSERT_EQ(cc_spare_bytes_beyond_first(), 0u);
    // All out first, then all home: carving (which may sweep idle classes'
    // spares away, CC_SWEEP_PAGES) is over before the first spare waits.
    std::vector<std::vector<void *>> out;
    for (unsigned cls : classes) out.push_back(FetchSpans(cls, cc_spares_kept(cls)));
    size_t beyond_first = 0;
    for (size_t i = 0; i < 3; i++) {
        const unsigned cls = classes[i];
        for (void *p : out[i]) Return(cls, p);
        const size_t kept = Bucket(cls).empty_spans;
        EXPECT_GE(kept, 1u) << "a class's first spare costs nothing against the total";
        beyond_first += (kept - 1) * (sc_span_pages(cls) << HC_PAGE_SHIFT);
        EXPECT_LE(cc_spare_bytes_beyond_first(), CC_SPARE_BYTES_TOTAL);
    }
    EXPECT_EQ(cc_spare_bytes_beyond_first(), beyond_first) << "the total counts what the buckets keep";
    EXPECT_LT(Bucket(classes[2]).empty_spans, cc_spares_kept(classes[2])) << "the last class hit the total";
    std::vector<void *> one = Fetch(classes[0], 1);  // a spare reused leaves the total
    EXPECT_EQ(cc_spare_bytes_beyond_first(), beyond_first - (sc_span_pages(classes[0]) << HC_PAGE_SHIFT));
    Return(classes[0], one[0]);
    cc_give_back_cached();
    EXPECT_EQ(cc_spare_bytes_beyond_first(), 0u) << "spares given back leave the total";
    EXPECT_PAGE_CACHE_CONSISTENT();
}

// The spares' total is drawn on by each shard in chunks of
// CC_SPARE_CREDIT_BYTES (central_shards.c), so that spans emptying and
// filling in two threads do not both change one counter each time: the
// total still counts exactly what is charged, a shard's draws are whole
// chunks, and what a shard has drawn and not used stays under two chunks.
TEST(SpanRefcount, EachShardDrawsOnTheSparesTotalInChunks) {
    const unsigned shard = CC_SHARDS - 1;
    const cc_bucket *bucket = cc_shard_bucket(shard, sc_index(1200));
    auto drawn = [] {  // what the shards have drawn: charged plus their credits
        size_t total = cc_spare_bytes_beyond_first();
        for (unsigned s = 0; s < CC_SHARDS; s++) total += __atomic_load_n(&cc_shard_states[s].spare_credit, __ATOMIC_RELAXED);
        return total;
    };
    const size_t page = HC_PAGE_SIZE, n = 3 * CC_SPARE_CREDIT_BYTES / page + 1;
    const size_t charged_before = cc_spare_bytes_beyond_first(), drawn_before = drawn();
    for (size_t i = 0; i < n; i++) ASSERT_EQ(cc_spare_charge(bucket, page), 1);
    EXPECT_EQ(cc_spare_bytes_beyond_first(), charged_before + n * page) << "the total counts what is charged";
    EXPECT_EQ((drawn() - drawn_before) % CC_SPARE_CREDIT_BYTES, 0u) << "drawn in whole chunks";
    for (size_t i = 0; i < n; i++) cc_spare_refund(bucket, page);
    EXPECT_EQ(cc_spare_bytes_beyond_first(), charged_before);
    EXPECT_LE(cc_shard_states[shard].spare_credit, 2 * CC_SPARE_CREDIT_BYTES) << "at most two chunks kept unused";
}

// A class of objects above CC_SPARES_MAX_SIZE keeps one spare: its second
// empty span goes back to the page cache, where stage 4's release policy
// sees it.
TEST(SpanRefcount, AClassOfBigObjectsKeepsOneSpare) {
    const unsigned cls = sc_index(120000);
    ASSERT_GT(sc_size(cls), (size_t)CC_SPARES_MAX_SIZE);
    EXPECT_EQ(cc_spares_kept(cls), 1u);
    EXPECT_GT(cc_spares_kept(sc_index(CC_SPARES_MAX_SIZE)), 1u) << "the limit is inclusive";
    std::vector<void *> a = Fetch(cls, 1);
    hc_span *first_span = pc_span_of(a[0]);
    std::vector<void *> more = Fetch(cls, first_span->object_count);  // the rest, and one of a second span
    a.insert(a.end(), more.begin(), more.end());
    ASSERT_NE(pc_span_of(a.back()), first_span);
    for (void *p : a)
        if (pc_span_of(p) == first_span) Return(cls, p);
    EXPECT_EQ(first_span->state, SPAN_SMALL) << "the first to empty waits";
    Return(cls, a.back());
    EXPECT_EQ(pc_span_of(a.back()), nullptr) << "the second to empty goes back";
    EXPECT_EQ(Bucket(cls).empty_spans, 1u);
    cc_give_back_cached();
    EXPECT_PAGE_CACHE_CONSISTENT();
}

// A spare used again is carved from its first slot, as if new: the objects
// come in address order, whatever order they were freed in (the freed list
// of the span is forgotten, not walked).
TEST(SpanRefcount, ASpareIsCarvedAgainInAddressOrder) {
    const unsigned cls = sc_index(2400);
    cc_give_back_cached();
    std::vector<void *> a = Fetch(cls, 1);
    hc_span *span = pc_span_of(a[0]);
    std::vector<void *> rest = Fetch(cls, span->object_count - 1);
    a.insert(a.end(), rest.begin(), rest.end());
    for (void *p : a) ASSERT_EQ(pc_span_of(p), span);
    std::sort(a.begin(), a.end());
    std::swap(a[0], a[1]);  // home out of address order: the lowest two swapped
    for (auto it = a.rbegin(); it != a.rend(); ++it) Return(cls, *it);
    ASSERT_EQ(Bucket(cls).empty_spans, 1u);
    std::vector<void *> again = FetchChain(cls, span->object_count);
    ASSERT_EQ(again.size(), (size_t)span->object_count);
    for (size_t i = 0; i < again.size(); i++)
        EXPECT_EQ(again[i], span_start(span) + i * span->object_size) << "slot " << i << " in address order";
    for (void *p : again) Return(cls, p);
    cc_give_back_cached();
    EXPECT_PAGE_CACHE_CONSISTENT();
}

// ---- The transfer cache ---------------------------------------------------------

// A full batch given back is handed to the next fetch as it was: same
// objects, same order, and no span's count or free list touched.
TEST(TransferCache, AFullBatchPassesOnIntactWithoutTouchingItsSpans) {
    const unsigned cls = sc_index(40);
    const uint32_t batch = sc_batch(cls);
    std::vector<void *> objs = Fetch(cls, batch);
    hc_span *span = pc_span_of(objs[0]);
    ASSERT_NE(span, nullptr);
    const uint32_t in_use = span->objects_in_use, free_count = span->free_count;
    const cc_bucket_census before = Bucket(cls);

    ReturnChain(cls, objs);
    cc_bucket_census during = Bucket(cls);
    EXPECT_EQ(during.batches, before.batches + 1);
    EXPECT_EQ(during.transfer_objects, before.transfer_objects + batch);
    EXPECT_EQ(during.span_free_objects, before.span_free_objects) << "no object went to its span";
    EXPECT_EQ(span->objects_in_use, in_use) << "the span's count is untouched";
    EXPECT_EQ(span->free_count, free_count);

    EXPECT_EQ(FetchChain(cls, batch), objs) << "the same batch, in the same order";
    EXPECT_EQ(Bucket(cls).batches, before.batches);
    for (void *p : objs) Return(cls, p);
    cc_give_back_cached();
}

// A thread in slow start asks for less than a batch: it gets the front of
// the top batch, and the rest stays there.
TEST(TransferCache, AFetchOfLessThanABatchSplitsTheTopBatch) {
    const unsigned cls = sc_index(56);
    const uint32_t batch = sc_batch(cls);
    std::vector<void *> objs = Fetch(cls, batch);
    ReturnChain(cls, objs);
    std::vector<void *> front = FetchChain(cls, 3);
    EXPECT_EQ(front, std::vector<void *>(objs.begin(), objs.begin() + 3));
    cc_bucket_census c = Bucket(cls);
    EXPECT_EQ(c.batches, 1u);
    EXPECT_EQ(c.transfer_objects, batch - 3u);
    EXPECT_EQ(FetchChain(cls, batch), std::vector<void *>(objs.begin() + 3, objs.end()));
    for (void *p : objs) Return(cls, p);
    cc_give_back_cached();
}

// The transfer cache keeps each batch as a row of its objects' addresses: a
// fetch of part of a batch is cut where the row says, reading no object's
// link (a batch from another thread is in that thread's cache, not this
// one's). Here the links inside the batch are rewritten after it went in:
// a cut that walked them would end at the wrong object.
TEST(TransferCache, AFetchCutsABatchByItsRowNotByItsLinks) {
    const unsigned cls = sc_index(176);
    const uint32_t batch = sc_batch(cls);
    ASSERT_GE(batch, 8u);
    std::vector<void *> objs = Fetch(cls, batch);
    ReturnChain(cls, objs);
    *static_cast<void **>(objs[1]) = objs[5];  // o0 -> o1 -> o5: a walk of 3 would end at o5
    void *first, *last;
    ASSERT_EQ(cc_fetch(cls, 3, &first, &last), 3u);
    EXPECT_EQ(first, objs[0]);
    EXPECT_EQ(last, objs[2]) << "the row's third object ends the cut";
    EXPECT_EQ(*static_cast<void **>(last), nullptr);
    *static_cast<void **>(objs[1]) = objs[2];  // the fetched chain o0 -> o1 -> o2, as it should be
    EXPECT_EQ(FetchChain(cls, batch), std::vector<void *>(objs.begin() + 3, objs.end()))
        << "the rest of the batch starts at the row's fourth object";
    for (void *p : objs) Return(cls, p);
    cc_give_back_cached();
}

// Past its capacity the transfer cache overflows to the spans; short chains
// always go to the spans.
TEST(TransferCache, OverflowAndShortChainsGoToTheSpans) {
    const unsigned cls = sc_index(88);
    const uint32_t batch = sc_batch(cls), capacity = cc_transfer_capacity(cls);
    std::vector<std::vector<void *>> batches;
    for (uint32_t i = 0; i <= capacity; i++) batches.push_back(Fetch(cls, batch));
    const cc_bucket_census before = Bucket(cls);
    for (auto &b : batches) ReturnChain(cls, b);
    cc_bucket_census after = Bucket(cls);
    EXPECT_EQ(after.batches, capacity);
    EXPECT_EQ(after.transfer_objects, (size_t)capacity * batch);
    EXPECT_EQ(after.span_free_objects, before.span_free_objects + batch) << "the one that did not fit";
    std::vector<void *> two = FetchChain(cls, 2);
    ReturnChain(cls, two);
    EXPECT_EQ(Bucket(cls).batches, capacity) << "a chain shorter than a batch skips the transfer cache";
    cc_give_back_cached();
    after = Bucket(cls);
    EXPECT_EQ(after.batches, 0u);
    EXPECT_EQ(after.span_bytes, 0u) << "given back: every span of the class went back";
}

// The transfer cache holds CC_TRANSFER_MAX_BYTES of a small class too, not
// only as many batches as a 128 B class fits there: a consumer's burst of
// 4,096 64 B objects (the bench's xthread ring), given back a batch at a
// time, waits whole for the producer's fetches, none of it on the spans.
// Emptying it takes more than one hold of the lock (CC_GIVE_BACK_BATCHES).
TEST(TransferCache, ABurstOfSmallObjectsFitsWhole) {
    const unsigned cls = sc_index(64);
    const uint32_t batch = sc_batch(cls), burst = 4096;
    ASSERT_EQ(burst % batch, 0u);
    EXPECT_GE((size_t)cc_transfer_capacity(cls) * batch * sc_size(cls), (size_t)burst * sc_size(cls))
        << "the cache's bytes hold the burst";
    std::vector<std::vector<void *>> batches;
    for (uint32_t i = 0; i < burst / batch; i++) batches.push_back(Fetch(cls, batch));
    const cc_bucket_census before = Bucket(cls);
    for (auto &b : batches) ReturnChain(cls, b);
    cc_bucket_census after = Bucket(cls);
    EXPECT_EQ(after.batches, before.batches + burst / batch);
    EXPECT_EQ(after.transfer_objects, before.transfer_objects + burst);
    EXPECT_EQ(after.span_free_objects, before.span_free_objects) << "none of the burst went to its spans";
    cc_give_back_cached();
    after = Bucket(cls);
    EXPECT_EQ(after.batches, 0u);
    EXPECT_EQ(after.transfer_objects, 0u);
    EXPECT_EQ(after.span_bytes, 0u) << "given back: every span of the class went back";
}

// A trip: a fetch of several batches pops them all in one call, the top
// batch first, each intact, and a fetch that ends inside a batch takes the
// front of its row and leaves the rest on top for the next.
TEST(TransferCache, ATripFetchesSeveralBatchesAtOnce) {
    const unsigned cls = sc_index(48);
    const uint32_t batch = sc_batch(cls), rows = cc_trip_batches(cls);
    ASSERT_EQ(rows, (uint32_t)CC_TRIP_MAX_BATCHES) << "small objects: the longest trip";
    // The two bounds meet at 64 B: its batches fill a trip's bytes, so a
    // producer/consumer pair of 64 B blocks (mimalloc-bench's xmalloc-test)
    // moves CC_TRIP_MAX_BYTES of them under each hold of the lock.
    const unsigned cls64 = sc_index(64);
    EXPECT_EQ(cc_trip_batches(cls64), (uint32_t)CC_TRIP_MAX_BATCHES);
    EXPECT_EQ((size_t)cc_return_max(cls64) * sc_size(cls64), CC_TRIP_MAX_BYTES);
    ASSERT_GE(cc_transfer_capacity(cls), rows + 1);
    std::vector<std::vector<void *>> given;
    for (uint32_t r = 0; r < rows + 1; r++) given.push_back(Fetch(cls, batch));
    for (auto &b : given) ReturnChain(cls, b);
    ASSERT_EQ(Bucket(cls).batches, rows + 1);
    std::vector<void *> expected;  // the top `rows` batches, the last given first
    for (uint32_t r = rows + 1; r-- > 1;) expected.insert(expected.end(), given[r].begin(), given[r].end());
    EXPECT_EQ(FetchChain(cls, rows * batch), expected) << "one fetch, a trip's batches in one chain";
    EXPECT_EQ(Bucket(cls).batches, 1u);
    std::vector<void *> part = FetchChain(cls, batch / 2);
    EXPECT_EQ(part, std::vector<void *>(given[0].begin(), given[0].begin() + batch / 2));
    EXPECT_EQ(FetchChain(cls, batch), std::vector<void *>(given[0].begin() + batch / 2, given[0].end()))
        << "the rest of the row, still on top";
    for (auto &b : given)
        for (void *p : b) Return(cls, p);
    cc_give_back_cached();
}

// The list policy's side of a trip: a thread whose list's limit has grown
// past a trip refills with one fetch of a trip (stage 2's tc_refill asks
// for min(limit, trip)), a trip's batches off the transfer cache at once.
TEST(TransferCache, AListWithRoomForATripRefillsOneInOneFetch) {
    std::thread([] {
        const size_t size = 160;
        const unsigned cls = sc_index(size);
        const uint32_t rows = cc_trip_batches(cls), batch = sc_batch(cls), trip = rows * batch;
        std::vector<void *> objs;
        for (uint32_t i = 0; i < 16 * trip; i++) objs.push_back(hc_malloc(size));
        const hc_free_list *list = &tc_current->lists[cls];  // the thread's cache exists now
        ASSERT_GE(list->max_length, trip) << "the limit grew past a trip";
        while (fl_length(list) > 0) objs.push_back(hc_malloc(size));  // the list is empty
        std::vector<std::vector<void *>> given;
        for (uint32_t r = 0; r < rows; r++) given.push_back(Fetch(cls, batch));
        for (auto &b : given) ReturnChain(cls, b);
        const cc_bucket_census before = Bucket(cls);
        ASSERT_GE(before.batches, rows);
        objs.push_back(hc_malloc(size));  // the refill
        const cc_bucket_census after = Bucket(cls);
        EXPECT_EQ(before.batches - after.batches, rows) << "one refill took a trip of batches";
        EXPECT_EQ(fl_length(list), trip - 1) << "all but the one returned on the list";
        for (void *p : objs) hc_free_sized(p, size);
        hc_thread_flush();
    }).join();
    cc_give_back_cached();
}

// The other side: a list at a limit of a trip or more that overflows gives
// a whole trip back, a trip's batches onto the transfer cache at once.
TEST(TransferCache, AListAtATripOverflowsAWholeTrip) {
    std::thread([] {
        const size_t size = 32;
        const unsigned cls = sc_index(size);
        const uint32_t rows = cc_trip_batches(cls), trip = rows * sc_batch(cls);
        ASSERT_GT(rows, 1u);
        std::vector<void *> objs;
        for (uint32_t i = 0; i < 64 * trip; i++) objs.push_back(hc_malloc(size));  // past the list's cap
        const hc_free_list *list = &tc_current->lists[cls];  // the thread's cache exists now
        const uint32_t limit = list->max_length;
        ASSERT_GE(limit, trip) << "the limit grew past a trip";
        ASSERT_GT(objs.size(), (size_t)limit + 1);
        size_t next = 0;
        while (fl_length(list) < limit) hc_free_sized(objs[next++], size);  // full, no overflow yet
        const cc_bucket_census before = Bucket(cls);
        hc_free_sized(objs[next++], size);  // the overflow
        const cc_bucket_census after = Bucket(cls);
        EXPECT_EQ(after.batches - before.batches, rows) << "one overflow gave back a trip";
        EXPECT_EQ(fl_length(list), limit + 1 - trip);
        for (; next < objs.size(); next++) hc_free_sized(objs[next], size);
        hc_thread_flush();
    }).join();
    cc_give_back_cached();
}

// A chain longer than a batch (a list trimmed by more) is cut into whole
// batches for the transfer cache; the remainder goes to the spans.
TEST(TransferCache, ALongChainIsCutIntoWholeBatches) {
    const unsigned cls = sc_index(104);
    const uint32_t batch = sc_batch(cls);
    std::vector<void *> objs = Fetch(cls, 2 * batch + batch / 2);
    const cc_bucket_census before = Bucket(cls);
    ReturnChain(cls, objs);
    cc_bucket_census after = Bucket(cls);
    EXPECT_EQ(after.batches, before.batches + 2);
    EXPECT_EQ(after.transfer_objects, before.transfer_objects + 2 * batch);
    EXPECT_EQ(after.span_free_objects, before.span_free_objects + batch / 2);
    EXPECT_EQ(FetchChain(cls, batch), std::vector<void *>(objs.begin() + batch, objs.begin() + 2 * batch))
        << "the second batch of the chain, intact, on top";
    EXPECT_EQ(FetchChain(cls, batch), std::vector<void *>(objs.begin(), objs.begin() + batch));
    for (uint32_t i = 0; i < 2 * batch; i++) Return(cls, objs[i]);  // the rest is home already
    cc_give_back_cached();
}

// A class nobody fetches from while other classes carve new spans gives its
// transfer cache and spare span back (the idle sweep, every CC_SWEEP_PAGES
// pages carved); a class that fetches keeps its batches. It takes two sweeps:
// the first clears the mark the idle class's own fetch left.
TEST(TransferCache, AnIdleClassGivesItsCacheBackWhileOthersCarveSpans) {
    const unsigned idle = sc_index(120), busy = sc_index(136), grower = sc_index(64 << 10);
    ReturnChain(idle, Fetch(idle, sc_batch(idle)));
    std::vector<void *> kept = Fetch(busy, sc_batch(busy)), cycled = Fetch(busy, sc_batch(busy));
    ReturnChain(busy, kept);
    ReturnChain(busy, cycled);  // on top: the busy class's fetches below take this one
    ASSERT_EQ(Bucket(idle).batches, 1u);
    ASSERT_GT(Bucket(idle).span_bytes, 0u);
    ASSERT_EQ(Bucket(busy).batches, 2u);

    std::vector<void *> grown;
    for (size_t pages = 0; pages < 3 * CC_SWEEP_PAGES; pages += sc_span_pages(grower)) {
        std::vector<void *> one = Fetch(grower, 1);  // one object per span: a new span each
        ASSERT_EQ(one.size(), 1u);
        grown.push_back(one[0]);
        ReturnChain(busy, FetchChain(busy, sc_batch(busy)));  // busy: a fetch every period
    }
    cc_bucket_census c = Bucket(idle);
    EXPECT_EQ(c.batches, 0u) << "the idle class's batch went back to its spans";
    EXPECT_EQ(c.transfer_objects, 0u);
    EXPECT_EQ(c.span_bytes, 0u) << "and its span, empty then, to the page cache";
    EXPECT_EQ(Bucket(busy).batches, 2u) << "a class that fetched keeps its transfer cache";
    EXPECT_EQ(FetchChain(busy, sc_batch(busy)), cycled);
    EXPECT_EQ(FetchChain(busy, sc_batch(busy)), kept) << "the batch below, never fetched, untouched";
    for (void *p : kept) Return(busy, p);
    for (void *p : cycled) Return(busy, p);
    for (void *p : grown) Return(grower, p);
    cc_give_back_cached();
    EXPECT_PAGE_CACHE_CONSISTENT();
}

// The sweep's clock is pages carved: a class gives its cache back once
// CC_SWEEP_PAGES pages have been carved since its last fetch (at the next
// sweep, within CC_SWEEP_EVERY_PAGES more), not before. A phase of one
// size that ends while the next size carves leaves at most that much
// behind (transfer_cache.h says why those figures).
TEST(TransferCache, AnIdleClassGivesBackOnceTheSweepPeriodIsCarvedSinceItsLastFetch) {
    const unsigned idle = sc_index(152), grower = sc_index(64 << 10);
    const size_t step = sc_span_pages(grower);
    ReturnChain(idle, Fetch(idle, sc_batch(idle)));
    ASSERT_EQ(Bucket(idle).batches, 1u);
    const size_t fetched_at = cc_bucket_of(idle)->fetched_at;
    auto carved_since = [&] { return __atomic_load_n(&cc_carved_pages, __ATOMIC_RELAXED) - fetched_at; };
    std::vector<void *> grown;
    auto carve = [&] {
        std::vector<void *> one = Fetch(grower, 1);  // one object per span: a new span each
        ASSERT_EQ(one.size(), 1u);
        grown.push_back(one[0]);
    };
    while (carved_since() + step < CC_SWEEP_PAGES) carve();
    EXPECT_EQ(Bucket(idle).batches, 1u) << "idle for less than the period (" << carved_since()
                                        << " pages carved since its fetch): it keeps its batch";
    while (carved_since() < CC_SWEEP_PAGES + CC_SWEEP_EVERY_PAGES + step) carve();
    EXPECT_EQ(Bucket(idle).batches, 0u) << carved_since() << " pages carved since its fetch, "
                                        << "and the batch is still cached";
    EXPECT_EQ(Bucket(idle).span_bytes, 0u) << "its span, empty then, back to the page cache";
    for (void *p : grown) Return(grower, p);
    cc_give_back_cached();
    EXPECT_PAGE_CACHE_CONSISTENT();
}

// Conservation: threads trade objects through one class's bucket, with
// batches of every size (full ones go through the transfer cache, others
// to the spans). No object is ever handed to two holders at once, and when
// all are home the bucket holds exactly the objects of its spans.
TEST(TransferCache, ThreadsTradingBatchesLoseAndDuplicateNothing) {
    const unsigned cls = sc_index(72);
    const uint32_t batch = sc_batch(cls);
    constexpr int kThreads = 4, kRounds = 3000;
    std::atomic<long> bad{0};
    std::mutex held_lock;
    std::set<void *> held_by_someone;
    auto take = [&](const std::vector<void *> &objs) {
        std::lock_guard<std::mutex> guard(held_lock);
        for (void *p : objs)
            if (!held_by_someone.insert(p).second) bad++;  // someone else holds it too
    };
    auto give = [&](const std::vector<void *> &objs) {
        std::lock_guard<std::mutex> guard(held_lock);
        for (void *p : objs) held_by_someone.erase(p);
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++)
        threads.emplace_back([&, t] {
            unsigned x = 777u + t;
            std::vector<std::vector<void *>> held;
            for (int r = 0; r < kRounds; r++) {
                x = x * 1103515245u + 12345u;
                if (held.size() < 4 && (x >> 16) % 3 != 0) {
                    uint32_t want = (x >> 8) % 4 == 0 ? 1 + (x >> 20) % batch : batch;
                    std::vector<void *> got = FetchChain(cls, want);
                    take(got);
                    held.push_back(got);
                } else if (!held.empty()) {
                    give(held.back());
                    ReturnChain(cls, held.back());
                    held.pop_back();
                }
            }
            for (auto &b : held) {
                give(b);
                ReturnChain(cls, b);
            }
        });
    for (auto &th : threads) th.join();
    EXPECT_EQ(bad.load(), 0) << "an object was handed to two holders at once";
    const cc_bucket_census c = Bucket(cls);
    const size_t span_size = sc_span_pages(cls) * HC_PAGE_SIZE;
    const size_t objects = c.span_bytes / span_size * (span_size / sc_size(cls));
    EXPECT_EQ(c.transfer_objects + c.span_free_objects, objects)
        << "every object of the class's spans is in the transfer cache or on its span";
    cc_give_back_cached();
    EXPECT_EQ(Bucket(cls).span_bytes, 0u) << "all home: every span went back";
    EXPECT_PAGE_CACHE_CONSISTENT();
}

// The object-to-span lookups of a return that overflows to the spans happen
// before the bucket lock is taken: with the lock held by someone else, an
// invalid object is still caught at once (it would wait forever if the
// lookups ran under the lock).
TEST(TransferCacheDeathTest, SpanLookupsRunBeforeTheBucketLock) {
    const unsigned cls = sc_index(1700);
    std::vector<void *> objs = Fetch(cls, 1);
    EXPECT_DEATH(
        {
            hc_lock_acquire(cc_bucket_lock(cls));
            std::thread([&] { Return(cls, static_cast<char *>(objs[0]) + 16); }).join();
        },
        "hcmalloc: free\\(\\): invalid pointer 0x");
    Return(cls, objs[0]);
}

// A fetch from the transfer cache loads every object of its rows itself
// (cc_pull_objects), so that the pops that follow find the lines in this
// core's cache. Copying the row and linking the rows' ends touch none of
// the objects inside a row, and a prefetch never faults. So with an object
// inside the row on a page made unreadable, the fetch must fault there.
void FetchABatchWithAnUnreadableObject(unsigned cls) {
    const uint32_t batch = sc_batch(cls);
    std::vector<void *> objs = Fetch(cls, batch);
    ReturnChain(cls, objs);
    if (mprotect(objs[batch / 2], 4096, PROT_NONE) != 0) _exit(2);
    void *first, *last;
    cc_fetch(cls, batch, &first, &last);
    _exit(0); // the object inside the row was not loaded
}

// The fault: SIGSEGV, or, under a sanitizer, which catches it, its report
// and a failing exit (not 0 or mprotect's 2).
bool FaultedOrReported(int status) {
    return (WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) ||
           (WIFEXITED(status) && WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 2);
}

TEST(TransferCacheDeathTest, AFetchLoadsEveryObjectOfItsRows) {
    const unsigned cls = sc_index(4096); // an object a page: one mprotect covers one object
    ASSERT_GE(sc_batch(cls), 3u);
    ASSERT_EQ(sc_size(cls) % 4096, 0u);
    EXPECT_EXIT(FetchABatchWithAnUnreadableObject(cls), FaultedOrReported, "");
}

TEST(SpanRefcountDeathTest, AnObjectReturnedToTheWrongClassAborts) {
    const unsigned cls = sc_index(1500);
    std::vector<void *> objs = Fetch(cls, 2);
    EXPECT_DEATH(Return(sc_index(1600), objs[0]), "hcmalloc: free\\(\\): invalid pointer 0x");
    EXPECT_DEATH(Return(cls, static_cast<char *>(objs[0]) + 16), "hcmalloc: free\\(\\): invalid pointer 0x");
    Return(cls, objs[0]);
    EXPECT_DEATH(Return(cls, objs[0]); Return(cls, objs[1]); Return(cls, objs[1]),
                 "hcmalloc: free\\(\\): double free detected of 0x")
        << "the object a span took back last cannot come back again";
    Return(cls, objs[1]);
}

// A chain that goes to the spans joins them run by run (the objects of one
// span that sit next to each other in the chain, already linked): a chain
// that alternates between two spans, each object's neighbours in another
// span, or in the same one, loses nothing, counts each span right, and
// comes back out whole.
TEST(SpanRuns, AChainMixingSpansGoesHomeRunByRunAndComesBackWhole) {
    const unsigned cls = sc_index(240);
    std::vector<void *> objs = Fetch(cls, 2 * (uint32_t)(sc_span_pages(cls) * HC_PAGE_SIZE / sc_size(cls)));
    std::vector<void *> a, b;
    for (void *p : objs) (pc_span_of(p) == pc_span_of(objs.front()) ? a : b).push_back(p);
    ASSERT_GE(a.size(), 6u);
    ASSERT_GE(b.size(), 6u);
    hc_span *span_a = pc_span_of(a[0]), *span_b = pc_span_of(b[0]);
    const uint32_t in_use_a = span_a->objects_in_use, in_use_b = span_b->objects_in_use;
    // a0 a1 b0 a2 b1 b2 b3 a3 a4 a5 b4 b5: runs of 2, 1, 1, 3, 3, 2.
    std::vector<void *> chain = {a[0], a[1], b[0], a[2], b[1], b[2], b[3], a[3], a[4], a[5], b[4], b[5]};
    ASSERT_LT(chain.size(), sc_batch(cls)) << "shorter than a batch: straight to the spans";
    const cc_bucket_census before = Bucket(cls);
    ReturnChain(cls, chain);
    EXPECT_EQ(Bucket(cls).span_free_objects, before.span_free_objects + chain.size());
    EXPECT_EQ(span_a->objects_in_use, in_use_a - 6);
    EXPECT_EQ(span_b->objects_in_use, in_use_b - 6);
    // Fetched back in pieces (part of a span's list, then the rest of it
    // whole): each object once, and no other.
    std::set<void *> back;
    for (uint32_t want : {4u, 2u, 6u}) {
        std::vector<void *> got = FetchChain(cls, want);
        for (void *p : got) EXPECT_TRUE(back.insert(p).second) << p << " handed out twice";
        if (back.size() >= chain.size()) break;
    }
    EXPECT_EQ(back, std::set<void *>(chain.begin(), chain.end()));
    EXPECT_EQ(span_a->objects_in_use, in_use_a);
    EXPECT_EQ(span_b->objects_in_use, in_use_b);
    ReturnChain(cls, objs);
    cc_give_back_cached();
    EXPECT_EQ(Bucket(cls).span_bytes, 0u) << "every object home: both spans went back";
    EXPECT_PAGE_CACHE_CONSISTENT();
}

// A refill that empties a span's list of returned objects takes the list by
// its head and finds its end after the lock: a list of a whole span's
// objects, then never-used slots of a new span, come out as one chain that
// ends in NULL, every object in it once.
TEST(SpanRuns, ARefillOfWholeListsAndNeverUsedSlotsIsOneChain) {
    const unsigned cls = sc_index(208);
    const uint32_t batch = sc_batch(cls);
    std::vector<void *> held = Fetch(cls, batch / 2);
    std::vector<void *> few(held.begin(), held.begin() + 3);
    ReturnChain(cls, few);  // the span's whole returned list: 3 objects
    std::vector<void *> got = FetchChain(cls, batch);
    ASSERT_GE(got.size(), 3u);
    EXPECT_EQ(std::vector<void *>(got.begin(), got.begin() + 3), few) << "the returned ones first, in their order";
    EXPECT_EQ(std::set<void *>(got.begin(), got.end()).size(), got.size());
    for (void *p : got) EXPECT_EQ(pm_class_of(p), cls);
    std::vector<void *> rest(held.begin() + 3, held.end());
    ReturnChain(cls, got);
    ReturnChain(cls, rest);
    cc_give_back_cached();
    EXPECT_EQ(Bucket(cls).span_bytes, 0u);
}

// What os_populate was asked to back, recorded by the observer below (a
// fixed array: the observer runs inside a fetch, and must not allocate).
struct BackedRange {
    uintptr_t from;
    size_t bytes;
};
BackedRange backed_ranges[64];
std::atomic<int> backed_count{0};

void NoteBacked(void *addr, size_t bytes) {
    int i = backed_count.fetch_add(1);
    if (i < 64) backed_ranges[i] = {(uintptr_t)addr, bytes};
}

bool PageBacked(uintptr_t page) {
    for (int i = 0; i < std::min(backed_count.load(), 64); i++)
        if (page >= backed_ranges[i].from && page < backed_ranges[i].from + backed_ranges[i].bytes) return true;
    return false;
}

// Never-used slots have their pages backed in one call before their links
// are written (cc_link_pieces, os_populate), for objects up to an OS page,
// whose links land on every page anyway; a larger object's link touches one
// of its pages, and the others are the program's to touch or not. Only
// pages that may not be resident are asked for: a span's pages that the
// program had before (span.h, dirty_pages) are not.
TEST(SpanCarve, NeverUsedSmallSlotsHaveTheirPagesBackedInOneCall) {
    const unsigned small = sc_index(80), big = sc_index(10000);  // no other test here uses them
    ASSERT_EQ(Bucket(small).span_bytes, 0u);
    ASSERT_EQ(Bucket(big).span_bytes, 0u);
    const uintptr_t page = os_page_size();
    ASSERT_GT(sc_size(big), page);
    pc_release_free_pages(SIZE_MAX);  // the spans below come from pages that are not resident
    backed_count = 0;
    os_set_populate_observer(NoteBacked);
    const std::vector<void *> slots = FetchChain(small, cc_trip_batches(small) * sc_batch(small));
    const int calls_for_small = backed_count.load();
    const std::vector<void *> big_slots = FetchChain(big, sc_batch(big));
    const int calls_for_big = backed_count.load() - calls_for_small;
    os_set_populate_observer(nullptr);

    std::set<uintptr_t> pages;
    for (void *p : slots) pages.insert((uintptr_t)p & ~(page - 1));
    ASSERT_GE(pages.size(), 2u) << "a trip of never-used slots on several pages";
    EXPECT_GE(calls_for_small, 1);
    EXPECT_LE((size_t)calls_for_small, pages.size() / 2) << "a call for a run of pages, not one a page";
    for (uintptr_t p : pages) EXPECT_TRUE(PageBacked(p)) << "page " << (void *)p << " left to fault";
    EXPECT_EQ(calls_for_big, 0) << "objects larger than a page: their pages are the program's to touch";

    // Given back one by one (to their spans, which empty into spares) and
    // fetched again: a spare is carved again from its first slot, over
    // pages its slots have written, and nothing is asked for.
    for (void *p : slots) Return(small, p);
    ASSERT_EQ(Bucket(small).empty_spans, Bucket(small).spans) << "every span of the class a spare";
    backed_count = 0;
    os_set_populate_observer(NoteBacked);
    const std::vector<void *> again = FetchChain(small, (uint32_t)slots.size());
    os_set_populate_observer(nullptr);
    EXPECT_GT(again.size(), slots.size() / 2) << "the spares carved again";
    EXPECT_EQ(backed_count.load(), 0) << "a spare's written slots asked for again";
    ReturnChain(small, again);
    ReturnChain(big, big_slots);
    cc_give_back_cached();

    // The spans back in the page cache, their pages the program's before:
    // new spans over them ask for nothing.
    backed_count = 0;
    os_set_populate_observer(NoteBacked);
    const std::vector<void *> reused = FetchChain(small, (uint32_t)slots.size());
    os_set_populate_observer(nullptr);
    EXPECT_EQ(backed_count.load(), 0) << "pages the program had asked for again";
    ReturnChain(small, reused);
    cc_give_back_cached();
}

// An object linked to itself (freed twice in a row, the fast path not
// looking) stops the program when its chain goes home, not a span that
// counts it twice.
TEST(SpanRunsDeathTest, AnObjectLinkedToItselfAborts) {
    const unsigned cls = sc_index(224);
    std::vector<void *> objs = Fetch(cls, 3);
    EXPECT_DEATH(
        {
            *static_cast<void **>(objs[0]) = objs[1];
            *static_cast<void **>(objs[1]) = objs[1];
            cc_return(cls, objs[0], objs[1], 3);
        },
        "hcmalloc: free\\(\\): double free detected of 0x");
    ReturnChain(cls, objs);
}

// A slot never handed out, behind a real object of its span in a chain
// (the run checks its highest index, not its first), stops the program.
TEST(SpanRunsDeathTest, ANeverUsedSlotLaterInARunAborts) {
    const unsigned cls = sc_index(224);
    std::vector<void *> objs = Fetch(cls, 2);  // two out: the count allows a run of two
    hc_span *span = pc_span_of(objs[0]);
    ASSERT_LT(span->carved, span->object_count);
    void *never_used = span_start(span) + (size_t)(span->object_count - 1) * span->object_size;
    EXPECT_DEATH(
        {
            *static_cast<void **>(objs[0]) = never_used;
            cc_return(cls, objs[0], never_used, 2);
        },
        "hcmalloc: free\\(\\): invalid pointer 0x.*never handed out");
    ReturnChain(cls, objs);
}

// A thread of its own, kept alive between steps, that runs each step it is
// given and waits for it: so a test can interleave what two threads do,
// each in the shard the central cache gave it.
class ShardThread {
  public:
    ShardThread() : thread_([this] { Loop(); }) { Run([this] { shard_ = cc_current_shard(); }); }
    ~ShardThread() {
        Run(nullptr);
        thread_.join();
    }
    unsigned shard() const { return shard_; }
    void Run(std::function<void()> step) {
        std::unique_lock<std::mutex> lock(mutex_);
        step_ = std::move(step);
        has_step_ = true;
        changed_.notify_all();
        changed_.wait(lock, [this] { return !has_step_; });
    }

  private:
    void Loop() {
        for (;;) {
            std::unique_lock<std::mutex> lock(mutex_);
            changed_.wait(lock, [this] { return has_step_; });
            std::function<void()> step = std::move(step_);
            if (step) step();
            has_step_ = false;
            changed_.notify_all();
            if (!step) return;
        }
    }
    std::mutex mutex_;
    std::condition_variable changed_;
    std::function<void()> step_;
    bool has_step_ = false;
    unsigned shard_ = 0;
    std::thread thread_;
};

cc_bucket_census Shard(unsigned shard, unsigned cls) {
    cc_bucket_census c;
    cc_get_shard_census(shard, cls, &c);
    return c;
}

std::set<void *> AsSet(const std::vector<void *> &objs) { return std::set<void *>(objs.begin(), objs.end()); }

// Threads are given shards round robin: CC_SHARDS threads started one after
// another never share one.
TEST(Shards, ThreadsStartedInTurnUseDifferentShards) {
    std::vector<std::unique_ptr<ShardThread>> threads;
    std::set<unsigned> shards;
    for (unsigned i = 0; i < CC_SHARDS; i++) {
        threads.push_back(std::make_unique<ShardThread>());
        shards.insert(threads.back()->shard());
        EXPECT_LT(threads.back()->shard(), (unsigned)CC_SHARDS);
    }
    EXPECT_EQ(shards.size(), (size_t)CC_SHARDS);
}

// Each thread fetches back the batch it gave back, not the batch another
// thread gave back after it: with one bucket per class, the last batch in
// (the other thread's) would be the first out.
TEST(Shards, EachThreadFetchesBackWhatItGaveBack) {
    const unsigned cls = sc_index(320);
    const uint32_t batch = sc_batch(cls);
    ShardThread a, b;
    ASSERT_NE(a.shard(), b.shard());
    std::vector<void *> objs_a, objs_b, again_a, again_b;
    a.Run([&] { objs_a = Fetch(cls, batch); });
    b.Run([&] { objs_b = Fetch(cls, batch); });
    ASSERT_EQ(objs_a.size(), batch);
    ASSERT_EQ(objs_b.size(), batch);
    a.Run([&] { ReturnChain(cls, objs_a); });
    b.Run([&] { ReturnChain(cls, objs_b); });
    a.Run([&] { again_a = FetchChain(cls, batch); });
    b.Run([&] { again_b = FetchChain(cls, batch); });
    EXPECT_EQ(AsSet(again_a), AsSet(objs_a)) << "thread a got its own batch back";
    EXPECT_EQ(AsSet(again_b), AsSet(objs_b)) << "thread b got its own batch back";
    a.Run([&] { ReturnChain(cls, again_a); });
    b.Run([&] { ReturnChain(cls, again_b); });
    cc_give_back_cached();
    EXPECT_EQ(Bucket(cls).span_bytes, 0u);
}

// An object freed by another thread goes home to the bucket of the shard
// whose thread carved its span, and that thread fetches it back from there.
TEST(Shards, AnObjectGoesHomeToTheShardThatCarvedItsSpan) {
    const unsigned cls = sc_index(384);
    ShardThread a, b;
    ASSERT_NE(a.shard(), b.shard());
    std::vector<void *> objs, again;
    a.Run([&] { objs = Fetch(cls, 3); });
    ASSERT_EQ(objs.size(), 3u);
    EXPECT_EQ(pc_span_of(objs[0])->shard, a.shard());
    const cc_bucket_census a_before = Shard(a.shard(), cls);
    b.Run([&] {
        for (void *p : objs) Return(cls, p);  // single objects: straight to their span
    });
    EXPECT_EQ(Shard(a.shard(), cls).span_free_objects, a_before.span_free_objects + 3);
    EXPECT_EQ(Shard(b.shard(), cls).span_bytes, 0u) << "thread b's shard holds no span of the class";
    EXPECT_EQ(Shard(b.shard(), cls).span_free_objects, 0u);
    a.Run([&] { again = Fetch(cls, 3); });
    EXPECT_EQ(AsSet(again), AsSet(objs)) << "thread a fetched them back from its span";
    a.Run([&] {
        for (void *p : again) Return(cls, p);
    });
    cc_give_back_cached();
    EXPECT_EQ(Bucket(cls).span_bytes, 0u);
    EXPECT_PAGE_CACHE_CONSISTENT();
}

// A thread whose own spans have free objects takes those before another
// shard's batches: its own lines, which its core wrote last, not lines the
// other thread's core just wrote.
TEST(Shards, AThreadTakesItsOwnSpansObjectsBeforeAnotherShardsBatches) {
    const unsigned cls = sc_index(512);
    const uint32_t batch = sc_batch(cls);
    ShardThread a, b;
    ASSERT_NE(a.shard(), b.shard());
    std::vector<void *> mine, theirs, next;
    a.Run([&] { mine = Fetch(cls, 1); });  // a's span: the rest of its slots are free
    ASSERT_GT(Shard(a.shard(), cls).span_free_objects, 0u);
    b.Run([&] {
        theirs = Fetch(cls, batch);
        ReturnChain(cls, theirs);
    });
    ASSERT_EQ(Shard(b.shard(), cls).batches, 1u);
    a.Run([&] { next = Fetch(cls, 1); });
    ASSERT_EQ(next.size(), 1u);
    EXPECT_EQ(pc_span_of(next[0])->shard, a.shard()) << "from its own span";
    EXPECT_EQ(Shard(b.shard(), cls).batches, 1u) << "thread b's batch left alone";
    a.Run([&] {
        Return(cls, mine[0]);
        Return(cls, next[0]);
    });
    cc_give_back_cached();
    EXPECT_EQ(Bucket(cls).span_bytes, 0u);
}

// A thread whose shard has nothing of a class carves a span rather than
// take another shard's batches while that transfer cache is not full: they
// are its own threads' to fetch back (two threads of `hold` that took each
// other's wrote lines the other had just written).
TEST(Shards, AThreadWithNothingLeavesAnotherShardsBatchesThatAreNotFull) {
    const unsigned cls = sc_index(448);
    const uint32_t batch = sc_batch(cls);
    ShardThread a, b;
    ASSERT_NE(a.shard(), b.shard());
    std::vector<void *> objs, taken, again;
    a.Run([&] {
        objs = Fetch(cls, batch);
        ReturnChain(cls, objs);
    });
    ASSERT_EQ(Shard(a.shard(), cls).batches, 1u);
    ASSERT_LT(1u, cc_transfer_capacity(cls));
    b.Run([&] { taken = FetchChain(cls, batch); });
    EXPECT_TRUE(std::none_of(taken.begin(), taken.end(), [&](void *p) { return AsSet(objs).count(p); }))
        << "thread b carved its own";
    EXPECT_EQ(Shard(a.shard(), cls).batches, 1u) << "thread a's batch left alone";
    a.Run([&] { again = FetchChain(cls, batch); });
    EXPECT_EQ(AsSet(again), AsSet(objs)) << "thread a fetched it back";
    a.Run([&] { ReturnChain(cls, again); });
    b.Run([&] { ReturnChain(cls, taken); });
    cc_give_back_cached();
    EXPECT_EQ(Bucket(cls).span_bytes, 0u);
}

// A full transfer cache is surplus its shard's threads do not take back (a
// consumer's, or a thread's that exited): a thread whose shard has nothing
// takes a trip of it before it carves a span, and no memory sits in one
// shard while another grows.
TEST(Shards, AThreadWithNothingTakesAFullTransferCachesBatchesBeforeCarving) {
    const unsigned cls = sc_index(7000);
    const uint32_t batch = sc_batch(cls), capacity = cc_transfer_capacity(cls);
    ShardThread a, b;
    ASSERT_NE(a.shard(), b.shard());
    std::vector<void *> objs, taken;
    a.Run([&] {
        objs = Fetch(cls, batch * capacity);
        for (uint32_t i = 0; i < capacity; i++)
            ReturnChain(cls, std::vector<void *>(objs.begin() + i * batch, objs.begin() + (i + 1) * batch));
    });
    ASSERT_EQ(Shard(a.shard(), cls).batches, capacity);
    const size_t span_bytes = Bucket(cls).span_bytes;
    b.Run([&] { taken = FetchChain(cls, batch); });
    ASSERT_EQ(taken.size(), batch);
    EXPECT_TRUE(std::all_of(taken.begin(), taken.end(), [&](void *p) { return AsSet(objs).count(p); }))
        << "thread b got thread a's objects";
    EXPECT_EQ(Bucket(cls).span_bytes, span_bytes) << "and carved no span";
    b.Run([&] { ReturnChain(cls, taken); });
    cc_give_back_cached();
    EXPECT_EQ(Bucket(cls).span_bytes, 0u);
}

// A batch another thread gives back goes to the transfer cache of the shard
// its objects came from, whoever gives it: a consumer's frees wait for
// their producer in the producer's own transfer cache, the first place its
// fetch looks, as rows of pointers.
TEST(Shards, AConsumersBatchGoesHomeToItsProducersTransferCache) {
    const unsigned cls = sc_index(2000);
    const uint32_t batch = sc_batch(cls);
    ShardThread producer, consumer;
    ASSERT_NE(producer.shard(), consumer.shard());
    std::vector<void *> objs, again;
    producer.Run([&] { objs = Fetch(cls, batch); });
    consumer.Run([&] { ReturnChain(cls, objs); });
    EXPECT_EQ(Shard(producer.shard(), cls).batches, 1u) << "home, in the producer's shard";
    EXPECT_EQ(Shard(consumer.shard(), cls).batches, 0u);
    producer.Run([&] { again = FetchChain(cls, batch); });
    EXPECT_EQ(AsSet(again), AsSet(objs)) << "the producer's next fetch got them";
    producer.Run([&] { ReturnChain(cls, again); });
    cc_give_back_cached();
    EXPECT_EQ(Bucket(cls).span_bytes, 0u);
}

// Each shard's new spans follow one another in the address space, apart
// from another shard's (pc_alloc_span_placed), whatever order the two
// threads carve in: with one place for all, two threads that carved in
// turn got every other page, and their objects' lines met at each edge
// (`hold` at two threads ran 2.5 times slower than two processes). Their
// records lie apart too (a pool per place).
TEST(Shards, EachShardsSpansLieTogetherApartFromAnothers) {
    const unsigned cls = sc_index(4000);
    cc_give_back_cached();
    ShardThread a, b;
    ASSERT_NE(a.shard(), b.shard());
    std::vector<void *> objs_a, objs_b;
    const uint32_t per_span = (uint32_t)((sc_span_pages(cls) << HC_PAGE_SHIFT) / sc_size(cls));
    for (int i = 0; i < 6; i++) {  // each fetch empties a new span
        a.Run([&] {
            std::vector<void *> got = Fetch(cls, per_span);
            objs_a.insert(objs_a.end(), got.begin(), got.end());
        });
        b.Run([&] {
            std::vector<void *> got = Fetch(cls, per_span);
            objs_b.insert(objs_b.end(), got.begin(), got.end());
        });
    }
    auto spans_of = [](const std::vector<void *> &objs) {
        std::map<uintptr_t, uintptr_t> spans;  // start page -> end page
        for (void *p : objs) spans[pc_span_of(p)->start_page] = span_end_page(pc_span_of(p));
        return spans;
    };
    const auto spans_a = spans_of(objs_a), spans_b = spans_of(objs_b);
    for (const auto *spans : {&spans_a, &spans_b}) {
        EXPECT_EQ(spans->size(), 6u);
        for (auto it = spans->begin(); std::next(it) != spans->end(); ++it)
            EXPECT_EQ(std::next(it)->first, it->second) << "a shard's spans follow one another";
    }
    for (const auto &[start, end] : spans_a)
        for (const auto &[other_start, other_end] : spans_b)
            EXPECT_TRUE(end != other_start && other_end != start) << "no span of one shard touches the other's";
    size_t shared_pairs = 0;
    for (void *p : objs_a)
        for (void *q : objs_b) shared_pairs += (uintptr_t)pc_span_of(p) / 128 == (uintptr_t)pc_span_of(q) / 128;
    EXPECT_EQ(shared_pairs, 0u) << "two shards' span records share a pair of lines (span_records.c)";
    a.Run([&] { ReturnChain(cls, objs_a); });
    b.Run([&] { ReturnChain(cls, objs_b); });
    cc_give_back_cached();
    EXPECT_EQ(Bucket(cls).span_bytes, 0u);
    EXPECT_PAGE_CACHE_CONSISTENT();
}

// Batches given back to a shard whose threads stopped fetching the class (a
// consumer's frees of its producer's objects, once the producer is idle)
// go back to their spans in the idle sweep like any idle class's. In a
// process of its own (a death test, run "threadsafe": the binary again,
// this test alone), where no earlier test has used the class in any shard.
int ConsumerBatchGoesBackInTheSweep() {
    const unsigned cls = sc_index(640), grower = sc_index(40 << 10);
    ShardThread producer, consumer;
    if (producer.shard() == consumer.shard()) return 2;
    std::vector<void *> objs;
    producer.Run([&] { objs = Fetch(cls, sc_batch(cls)); });
    consumer.Run([&] { ReturnChain(cls, objs); });
    if (Shard(producer.shard(), cls).batches != 1 || Shard(consumer.shard(), cls).batches != 0) return 3;
    for (size_t pages = 0; pages < 3 * CC_SWEEP_PAGES; pages += sc_span_pages(grower))
        if (Fetch(grower, 1).size() != 1) return 4;  // one object per span: a new span each, kept
    if (Shard(producer.shard(), cls).batches != 0) return 5;  // the batch stayed
    if (Bucket(cls).span_bytes != 0) return 6;                // its span, empty then, stayed
    return 0;
}

TEST(ShardsDeathTest, BatchesInAShardNobodyFetchesFromGoBackInTheSweep) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(exit(ConsumerBatchGoesBackInTheSweep()), testing::ExitedWithCode(0), "")
        << "exit 3: the batch did not go home to the producer's shard; 5: it stayed there; "
           "6: its span was not given back";
}

// When the page cache has no span to give (the OS refuses memory), a thread
// whose shard has nothing takes any other shard's batches, full or not,
// before it reports ENOMEM. In a process of its own: its heap's free pages
// are taken first, so that the next span would need a new region.
int BatchesAreTakenWhenNoSpanCanBeHad() {
    const unsigned cls = sc_index(8000);
    ShardThread a, b;
    if (a.shard() == b.shard()) return 2;
    std::vector<void *> objs, taken;
    a.Run([&] {
        objs = Fetch(cls, sc_batch(cls));
        ReturnChain(cls, objs);
    });
    if (Shard(a.shard(), cls).batches != 1 || cc_transfer_capacity(cls) < 2) return 3;
    std::vector<hc_span *> free_spans;  // every free page, taken
    for (pc_census c = Census(); c.free_pages > 0; c = Census())
        free_spans.push_back(pc_alloc_span(c.largest_free_pages, 0));
    os_fail_next_maps(1000);
    b.Run([&] { taken = FetchChain(cls, sc_batch(cls)); });
    os_fail_next_maps(0);
    if (AsSet(taken) != AsSet(objs)) return 4;
    b.Run([&] { ReturnChain(cls, taken); });
    for (hc_span *span : free_spans) pc_free_span(span);
    return 0;
}

TEST(ShardsDeathTest, AnotherShardsBatchesAreTakenWhenNoSpanCanBeHad) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(exit(BatchesAreTakenWhenNoSpanCanBeHad()), testing::ExitedWithCode(0), "")
        << "exit 4: thread b did not get thread a's batch when no span could be had";
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
