// stage3_pagecache/page_cache_test.cc — the page cache on its own: split,
// merge, conservation of pages, alignment, direct mappings.
//
// Every test gives back all it takes, so the page cache is fully merged
// (one free span per region) between tests, and pc_check() must pass.
#include <errno.h>
#include <sys/mman.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "stage3_pagecache/page_cache_test_util.h"

extern "C" {
#include "common/os.h"
#include "common/pool.h"
#include "stage3_pagecache/page_policy.h"
}

namespace {

size_t InUsePages(const pc_census &c) { return c.small_pages + c.large_pages; }

// The longest free span of the heap, as a view (state SPAN_FREE).
pc_span_view LongestFreeSpan() {
    pc_span_view best{};
    pc_visit_spans(
        [](void *arg, const pc_span_view *v) {
            auto *b = static_cast<pc_span_view *>(arg);
            if (v->state == SPAN_FREE && v->page_count > b->page_count) *b = *v;
        },
        &best);
    return best;
}

// A request longer than every free span, when the longest one has unmapped
// pages beside it: the heap grows by what that span lacks, right next to
// it, and the two merge (a program of large blocks freed and asked for
// again in other sizes reuses its resident pages instead of holding
// several regions of them). The setting is made on purpose: a hole of
// address space under a guard this test maps, a region placed in the hole
// (the kernel maps top-down, at the highest gap that fits), freed, then
// the guard taken away so that the pages after the region are free.
// First in the file: the heap is still small, so the region is exactly
// the request.
TEST(PageCache, ARequestLongerThanEveryFreeSpanGrowsTheLongestIntoItsNeighbours) {
    const size_t region_pages = 2048, hole = (size_t)64 << 20;  // 16 MiB in a 64 MiB hole
    char *guard = static_cast<char *>(mmap(nullptr, 2 * hole, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(guard, MAP_FAILED);
    munmap(guard, hole);  // the hole: [guard, guard + hole); the guard above it stays
    hc_span *block = pc_alloc_span(region_pages, 0);
    ASSERT_NE(block, nullptr);
    const uintptr_t end = span_end_page(block) << HC_PAGE_SHIFT;
    const bool in_hole = end > (uintptr_t)guard && end <= (uintptr_t)guard + hole;
    pc_free_span(block);
    munmap(guard + hole, hole);
    if (!in_hole)
        GTEST_SKIP() << "the kernel put the region elsewhere than the hole (a higher gap fitted)";
    const pc_census before = Census();
    const pc_span_view longest = LongestFreeSpan();
    ASSERT_GE(longest.page_count, region_pages);
    const size_t want = longest.page_count + 64;
    hc_span *s = pc_alloc_span(want, 0);
    ASSERT_NE(s, nullptr);
    const pc_census after = Census();
    EXPECT_EQ(after.heap_pages - before.heap_pages, 64u) << "only what the longest free span lacked was mapped";
    EXPECT_TRUE(span_covers(s, longest.start_page)) << "the block lies over the old free span";
    EXPECT_PAGE_CACHE_CONSISTENT();
    pc_free_span(s);
    EXPECT_PAGE_CACHE_CONSISTENT();
}

TEST(PageCache, SplitThenMergeReturnsToOneSpan) {
    // Three spans carved from the front of one free span, in address order.
    hc_span *a = pc_alloc_span(1, 0);
    ASSERT_NE(a, nullptr);
    const pc_census start = Census();  // after any growth a's request caused
    hc_span *b = pc_alloc_span(2, 0);
    hc_span *c = pc_alloc_span(3, 0);
    ASSERT_NE(b, nullptr);
    ASSERT_NE(c, nullptr);
    ASSERT_EQ(b->start_page, span_end_page(a)) << "split takes the front, the rest stays free";
    ASSERT_EQ(c->start_page, span_end_page(b));
    hc_span *rest = pm_lookup(span_end_page(c));
    ASSERT_NE(rest, nullptr) << "the remainder of the split is in the page map";
    EXPECT_EQ(rest->state, SPAN_FREE);
    EXPECT_EQ(rest->start_page, span_end_page(c));
    EXPECT_EQ(Census().free_spans, start.free_spans) << "the remainder replaced the span it came from";
    EXPECT_EQ(Census().free_pages, start.free_pages - 5);
    EXPECT_PAGE_CACHE_CONSISTENT();

    const uintptr_t a_start = a->start_page;
    const size_t whole = 6 + rest->page_count;
    pc_free_span(b);  // both neighbours in use: stays on its own
    EXPECT_EQ(Census().free_spans, start.free_spans + 1);
    EXPECT_PAGE_CACHE_CONSISTENT();
    pc_free_span(a);  // merges with b
    hc_span *ab = pm_lookup(a_start);
    ASSERT_NE(ab, nullptr);
    EXPECT_EQ(ab->state, SPAN_FREE);
    EXPECT_EQ(ab->page_count, 3u);
    EXPECT_EQ(pm_lookup(a_start + 2), ab) << "last page of the merged span maps to it";
    EXPECT_EQ(Census().free_spans, start.free_spans + 1);
    EXPECT_PAGE_CACHE_CONSISTENT();
    pc_free_span(c);  // merges with a+b on the left and the remainder on the right
    hc_span *one = pm_lookup(a_start);
    ASSERT_NE(one, nullptr);
    EXPECT_EQ(one->state, SPAN_FREE);
    EXPECT_EQ(one->start_page, a_start);
    EXPECT_EQ(one->page_count, whole);
    EXPECT_EQ(pm_lookup(a_start + whole - 1), one);
    EXPECT_EQ(Census().free_spans, start.free_spans);
    EXPECT_EQ(Census().free_pages, start.free_pages + 1);
    EXPECT_PAGE_CACHE_CONSISTENT();
}

// dirty_pages (span.h): how many of a span's pages may hold anything but
// zeros. Pages the program never had, or that were released, count as
// clean; what it gave back counts as dirty, through merges and splits.
// A refill and calloc trust a count of 0, so a merge that forgets a
// neighbour's dirty pages would hand out garbage as zeros.
TEST(PageCache, DirtyPagesCountWhatTheProgramMayHaveWritten) {
    pc_release_free_pages(SIZE_MAX);  // every free page now reads as zero
    EXPECT_PAGE_CACHE_CONSISTENT();   // which checks dirty_pages <= backed_pages
    hc_span *a = pc_alloc_span(1, 0);
    hc_span *b = pc_alloc_span(2, 0);
    hc_span *c = pc_alloc_span(3, 0);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    ASSERT_NE(c, nullptr);
    ASSERT_EQ(b->start_page, span_end_page(a));
    ASSERT_EQ(c->start_page, span_end_page(b));
    EXPECT_EQ(a->dirty_pages + b->dirty_pages + c->dirty_pages, 0u) << "released pages are handed out clean";
    const uintptr_t a_start = a->start_page;
    pc_free_span(b);
    EXPECT_EQ(pm_lookup(a_start + 1)->dirty_pages, 2u) << "a block given back may have been written";
    pc_free_span(a);  // merges with b, on its right
    EXPECT_EQ(pm_lookup(a_start)->dirty_pages, 3u) << "a merge adds its right neighbour's dirty pages";
    pc_free_span(c);  // merges with a+b on its left, the clean remainder on its right
    hc_span *one = pm_lookup(a_start);
    ASSERT_NE(one, nullptr);
    EXPECT_EQ(one->dirty_pages, 6u) << "a merge adds its left neighbour's dirty pages, and clean ones add none";
    EXPECT_GT(one->page_count, 6u);
    EXPECT_PAGE_CACHE_CONSISTENT();
    // A split cannot tell where the dirty pages are: each piece may hold them all.
    hc_span *front = pc_alloc_span(2, 0);
    ASSERT_NE(front, nullptr);
    ASSERT_EQ(front->start_page, a_start);
    EXPECT_EQ(front->dirty_pages, 2u);
    EXPECT_EQ(pm_lookup(span_end_page(front))->dirty_pages, 6u);
    pc_free_span(front);
    pc_release_free_pages(SIZE_MAX);
    EXPECT_EQ(pm_lookup(a_start)->dirty_pages, 0u) << "released pages read as zero again";
    EXPECT_PAGE_CACHE_CONSISTENT();
}

TEST(PageCache, MergingNeverTouchesASpanInUse) {
    hc_span *a = pc_alloc_span(4, 0);
    hc_span *b = pc_alloc_span(4, 0);
    hc_span *c = pc_alloc_span(4, 0);
    ASSERT_TRUE(a && b && c);
    ASSERT_EQ(b->start_page, span_end_page(a));
    ASSERT_EQ(c->start_page, span_end_page(b));
    const uintptr_t b_start = b->start_page;
    pc_free_span(a);
    pc_free_span(c);
    // b is untouched and still wholly registered...
    EXPECT_EQ(b->state, SPAN_LARGE);
    EXPECT_EQ(b->start_page, b_start);
    EXPECT_EQ(b->page_count, 4u);
    for (uintptr_t p = b_start; p < b_start + 4; p++) EXPECT_EQ(pm_lookup(p), b);
    // ...and the free spans on either side stopped at it.
    hc_span *left = pm_lookup(b_start - 1);
    hc_span *right = pm_lookup(b_start + 4);
    ASSERT_TRUE(left && right);
    EXPECT_EQ(left->state, SPAN_FREE);
    EXPECT_EQ(span_end_page(left), b_start);
    EXPECT_EQ(right->state, SPAN_FREE);
    EXPECT_EQ(right->start_page, b_start + 4);
    EXPECT_NE(left, right);
    EXPECT_PAGE_CACHE_CONSISTENT();
    const size_t spans_before = Census().free_spans;
    pc_free_span(b);
    EXPECT_EQ(Census().free_spans, spans_before - 1) << "three free spans became one";
    EXPECT_PAGE_CACHE_CONSISTENT();
}

TEST(PageCache, FreePagesAreConserved) {
    std::mt19937_64 rng(7);
    std::vector<hc_span *> live;
    size_t live_pages = 0;
    const pc_census base = Census();
    ASSERT_EQ(InUsePages(base), 0u);
    for (int op = 0; op < 3000; op++) {
        if (live.empty() || rng() % 100 < 55) {
            size_t pages = rng() % 8 ? 1 + rng() % 16 : 17 + rng() % 300;  // some above the lists
            unsigned cls = rng() % 2 ? 0 : 1 + (unsigned)(rng() % (HC_NUM_CLASSES - 1));
            if (cls) pages = sc_span_pages(cls);
            hc_span *s = pc_alloc_span(pages, cls);
            ASSERT_NE(s, nullptr);
            ASSERT_EQ(s->page_count, pages);
            live.push_back(s);
            live_pages += pages;
        } else {
            size_t i = rng() % live.size();
            live_pages -= live[i]->page_count;
            pc_free_span(live[i]);
            live[i] = live.back();
            live.pop_back();
        }
        pc_census c = Census();
        ASSERT_EQ(InUsePages(c), live_pages) << "op " << op;
        ASSERT_EQ(c.free_pages + live_pages, c.heap_pages) << "op " << op;
        if (op % 250 == 0) EXPECT_PAGE_CACHE_CONSISTENT();
    }
    for (hc_span *s : live) pc_free_span(s);
    pc_census end = Census();
    EXPECT_EQ(end.free_pages, end.heap_pages);
    EXPECT_LE(end.free_spans, end.regions) << "everything merged back: at most one span per region";
    EXPECT_PAGE_CACHE_CONSISTENT();
}

TEST(PageCache, SmallSpansKnowTheirObjects) {
    for (unsigned cls : {1u, 2u, 17u, 18u, 50u, HC_NUM_CLASSES - 1u}) {
        size_t pages = sc_span_pages(cls);
        hc_span *s = pc_alloc_span(pages, cls);
        ASSERT_NE(s, nullptr);
        EXPECT_EQ(s->state, SPAN_SMALL);
        EXPECT_EQ(s->size_class, cls);
        EXPECT_EQ(s->object_size, sc_size(cls));
        EXPECT_EQ(s->object_count, span_bytes(s) / sc_size(cls));
        EXPECT_EQ(s->objects_in_use, 0u);
        char *base = span_start(s);
        for (uintptr_t p = s->start_page; p < span_end_page(s); p++) EXPECT_EQ(pm_lookup(p), s);
        EXPECT_EQ(pc_span_of(base + span_bytes(s) - 1), s) << "any byte finds its span";
        for (uint32_t i = 0; i < s->object_count; i++) {
            ASSERT_EQ(span_object_index(s, base + (size_t)i * s->object_size), (long)i) << cls;
            if (s->object_size > 8) {
                ASSERT_EQ(span_object_index(s, base + (size_t)i * s->object_size + 8), -1)
                    << "an interior pointer is no object";
            }
        }
        EXPECT_EQ(span_object_index(s, base + (size_t)s->object_count * s->object_size), -1)
            << "the tail past the last object is no object";
        pc_free_span(s);
        EXPECT_EQ(pc_span_of(base), nullptr) << "a free span is nobody's";
    }
    EXPECT_PAGE_CACHE_CONSISTENT();
}

// pc_alloc_span_placed: each caller's spans follow one another from where
// its last one ended, and two callers that ask in turn do not interleave:
// the first, with no place yet, starts PC_PLACEMENT_GAP pages into the
// free span it is given, and the second, with none either, is given those
// pages before it (the shorter free span), not the ones after. (Each test
// of places uses places no other test in this binary has used.)
TEST(PageCache, PlacedSpansOfEachCallerLieTogetherApartFromAnothers) {
    const unsigned cls = 49;  // one-page spans
    ASSERT_EQ(sc_span_pages(cls), 1u);
    const unsigned place_a = 0, place_b = 1;
    std::vector<hc_span *> a, b;
    for (int i = 0; i < 8; i++) {
        a.push_back(pc_alloc_span_placed(1, cls, place_a));
        b.push_back(pc_alloc_span_placed(1, cls, place_b));
        ASSERT_NE(a.back(), nullptr);
        ASSERT_NE(b.back(), nullptr);
        EXPECT_EQ(a.back()->state, SPAN_SMALL);
    }
    for (const auto *spans : {&a, &b})
        for (size_t i = 1; i < spans->size(); i++)
            EXPECT_EQ((*spans)[i]->start_page, span_end_page((*spans)[i - 1])) << "one after another";
    EXPECT_EQ(a.front()->start_page, span_end_page(b.back()) + (PC_PLACEMENT_GAP - b.size()))
        << "the second caller took the pages before the first's place";
    for (hc_span *x : a)
        for (hc_span *y : b)
            EXPECT_TRUE(span_end_page(x) != y->start_page && span_end_page(y) != x->start_page)
                << "no span of one caller touches the other's";
    for (hc_span *x : a) pc_free_span(x);
    for (hc_span *y : b) pc_free_span(y);
    EXPECT_PAGE_CACHE_CONSISTENT();
}

// Two places that carve in turn get their spans' records from pools of
// their own (span_records.c): no record of one shares a 128-byte pair of
// lines with the other's, whichever free span each span was cut from,
// the first time and again once every record has died and been reused.
TEST(PageCache, EachPlacesSpanRecordsLieApartFromAnothers) {
    const unsigned cls = 49;  // one-page spans
    const unsigned place_a = 2, place_b = 3;
    for (int round = 0; round < 2; round++) {
        std::vector<hc_span *> a, b;
        for (int i = 0; i < 64; i++) {
            a.push_back(pc_alloc_span_placed(1, cls, place_a));
            b.push_back(pc_alloc_span_placed(1, cls, place_b));
            ASSERT_NE(a.back(), nullptr);
            ASSERT_NE(b.back(), nullptr);
        }
        size_t shared_pairs = 0;
        for (hc_span *x : a)
            for (hc_span *y : b) shared_pairs += (uintptr_t)x / 128 == (uintptr_t)y / 128;
        EXPECT_EQ(shared_pairs, 0u) << "round " << round;
        for (hc_span *x : a) pc_free_span(x);
        for (hc_span *y : b) pc_free_span(y);
    }
    EXPECT_PAGE_CACHE_CONSISTENT();
}

// A record that dies (its span merged into a neighbour) goes back to the
// pool of the place it came from, where that place's next split finds it:
// a place that carves and frees over and over maps no more records.
TEST(PageCache, APlacesRecordsAreReusedByIt) {
    const unsigned cls = 49;  // one-page spans
    const unsigned place = 4;
    auto cycle = [&] {
        std::vector<hc_span *> spans;
        for (int i = 0; i < 256; i++) {
            spans.push_back(pc_alloc_span_placed(1, cls, place));
            ASSERT_NE(spans.back(), nullptr);
        }
        for (hc_span *s : spans) pc_free_span(s);
    };
    cycle();
    const size_t metadata = pool_mapped_bytes();
    for (int i = 0; i < 20; i++) cycle();  // 20 x 256 spans carved and freed
    EXPECT_EQ(pool_mapped_bytes(), metadata) << "records made for the place are not reused by it";
    EXPECT_PAGE_CACHE_CONSISTENT();
}

TEST(PageCache, AlignedSpansStartOnTheirAlignment) {
    std::vector<hc_span *> spans;
    for (size_t align = 2; align <= 1024; align *= 2) {
        for (size_t pages : {(size_t)1, align - 1, align + 3}) {
            hc_span *s = pc_alloc_span_aligned(pages, align);
            ASSERT_NE(s, nullptr) << align << " " << pages;
            EXPECT_EQ(s->start_page % align, 0u) << align;
            EXPECT_EQ(s->page_count, pages);
            EXPECT_EQ(pc_span_of(span_start(s)), s);
            spans.push_back(s);
        }
        EXPECT_PAGE_CACHE_CONSISTENT();
    }
    for (hc_span *s : spans) pc_free_span(s);
    EXPECT_PAGE_CACHE_CONSISTENT();
    pc_census c = Census();
    EXPECT_EQ(c.free_pages, c.heap_pages);
}

TEST(PageCache, VeryLargeSpansAreMappedDirectlyAndRegistered) {
    const size_t pages = PC_DIRECT_MAP_BYTES >> HC_PAGE_SHIFT;
    const pc_census before = Census();
    const size_t mapped = os_mapped_bytes();
    hc_span *s = pc_alloc_span(pages + 1, 0);
    ASSERT_NE(s, nullptr);
    EXPECT_TRUE(s->direct);
    EXPECT_GE(os_mapped_bytes() - mapped, span_bytes(s));
    pc_census during = Census();
    EXPECT_EQ(during.heap_pages, before.heap_pages) << "not taken from the heap";
    EXPECT_EQ(during.direct_pages, pages + 1);
    char *base = span_start(s);
    EXPECT_EQ(pc_span_of(base), s);
    EXPECT_EQ(pc_span_of(base + span_bytes(s) - 1), s);
    base[0] = 1;
    base[span_bytes(s) - 1] = 2;
    // The page-map leaves the mapping touches (one per 1 GiB region).
    const size_t leaves = ((span_page_of(base + span_bytes(s) - 1) >> PM_LEAF_BITS) -
                           (span_page_of(base) >> PM_LEAF_BITS)) + 1;
    pc_free_span(s);
    EXPECT_EQ(pm_lookup(span_page_of(base)), nullptr) << "unregistered before it was unmapped";
    // Slack: registering the span may have mapped a page-map leaf for each
    // 1 GiB region it touches, and leaves stay: two when the mapping
    // straddles a leaf boundary (it did in 12 of 200 runs with an allowance
    // of one). The 1 MiB is --config=opt's layout.
    EXPECT_LE(os_mapped_bytes(), mapped + leaves * sizeof(pm_leaf) + (1 << 20))
        << "given back to the OS (" << leaves << " page-map leaves allowed)";
    EXPECT_EQ(Census().direct_pages, 0u);

    hc_span *aligned = pc_alloc_span_aligned(pages, 256);  // 2 MiB aligned
    ASSERT_NE(aligned, nullptr);
    EXPECT_TRUE(aligned->direct);
    EXPECT_EQ(aligned->start_page % 256, 0u);
    pc_free_span(aligned);
    EXPECT_PAGE_CACHE_CONSISTENT();
}

TEST(PageCache, RefusedMappingIsENOMEMAndChangesNothing) {
    const pc_census before = Census();
    os_fail_next_maps(1u << 30);
    errno = 0;
    hc_span *s = pc_alloc_span(before.free_pages + 1000, 0);  // more than is free
    int err = errno;
    errno = 0;
    hc_span *direct = pc_alloc_span((PC_DIRECT_MAP_BYTES >> HC_PAGE_SHIFT) * 2, 0);
    int direct_err = errno;
    os_fail_next_maps(0);
    EXPECT_EQ(s, nullptr);
    EXPECT_EQ(err, ENOMEM);
    EXPECT_EQ(direct, nullptr);
    EXPECT_EQ(direct_err, ENOMEM);
    pc_census after = Census();
    EXPECT_EQ(after.heap_pages, before.heap_pages);
    EXPECT_EQ(after.free_pages, before.free_pages);
    errno = 0;
    EXPECT_EQ(pc_alloc_span(PC_MAX_PAGES + 1, 0), nullptr);
    EXPECT_EQ(errno, ENOMEM);
    EXPECT_PAGE_CACHE_CONSISTENT();
}

TEST(PageCache, ManyThreadsSplitAndMergeConsistently) {
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; t++)
        threads.emplace_back([t] {
            std::mt19937_64 rng(100 + t);
            std::vector<hc_span *> mine;
            for (int op = 0; op < 2000; op++) {
                if (mine.empty() || rng() % 2) {
                    hc_span *s = pc_alloc_span(1 + rng() % 40, 0);
                    ASSERT_NE(s, nullptr);
                    span_start(s)[0] = static_cast<char>(t);  // the memory is really ours
                    mine.push_back(s);
                } else {
                    size_t i = rng() % mine.size();
                    ASSERT_EQ(span_start(mine[i])[0], static_cast<char>(t));
                    pc_free_span(mine[i]);
                    mine[i] = mine.back();
                    mine.pop_back();
                }
            }
            for (hc_span *s : mine) pc_free_span(s);
        });
    for (auto &th : threads) th.join();
    EXPECT_PAGE_CACHE_CONSISTENT();
    pc_census c = Census();
    EXPECT_EQ(c.free_pages, c.heap_pages);
    EXPECT_LE(c.free_spans, c.regions);
}

// The page map's cost for a 1 GiB heap: take 1 GiB of spans, count nodes.
TEST(PageCache, PageMapCostForAOneGiBHeap) {
    pm_usage before, after;
    pm_get_usage(&before);
    const size_t gib_pages = ((size_t)1 << 30) >> HC_PAGE_SHIFT;
    std::vector<hc_span *> spans;
    for (size_t taken = 0; taken < gib_pages; taken += PC_MAX_LIST_PAGES) {
        hc_span *s = pc_alloc_span(PC_MAX_LIST_PAGES, 0);
        ASSERT_NE(s, nullptr);
        spans.push_back(s);
    }
    pm_get_usage(&after);
    pc_census c = Census();
    const size_t leaves = after.leaf_nodes - before.leaf_nodes;
    std::printf("page map for a 1 GiB heap (%zu regions): +%zu leaves, %zu KiB mapped "
                "(+ %zu KiB static root); %zu KiB in total for %zu heap pages\n",
                c.regions, leaves, (after.mapped_bytes - before.mapped_bytes) >> 10,
                (PM_ROOT_ENTRIES * sizeof(void *)) >> 10, after.mapped_bytes >> 10, c.heap_pages);
    // One leaf per GiB of address space the heap touches, plus one partial
    // leaf at each end of a region (and a few left from the direct mappings
    // of other tests).
    EXPECT_LE(after.leaf_nodes, c.heap_pages / PM_LEAF_ENTRIES + 2 * c.regions + 4);
    for (hc_span *s : spans) pc_free_span(s);
    c = Census();
    EXPECT_EQ(c.free_pages, c.heap_pages);
    EXPECT_LE(c.free_spans, c.regions);
    EXPECT_GE(c.largest_free_pages, gib_pages / 8) << "growth by a quarter keeps regions long";
    EXPECT_PAGE_CACHE_CONSISTENT();
}

// 10,000 long free spans (longer than the exact-length lists), each after a
// one-page span in use so none can merge with the next: every request still
// gets the shortest long-enough span, lowest address first, and the tree's
// invariants hold (pc_check walks it: order by (length, address), heap by
// priority).
TEST(PageCache, TenThousandLongFreeSpansStillGiveTheBestFit) {
    const int kSpans = 10000;
    std::mt19937 rng(7);
    std::vector<hc_span *> fences;
    for (int i = 0; i < kSpans; i++) {
        hc_span *s = pc_alloc_span(1 + PC_MAX_LIST_PAGES + 1 + rng() % 64, 0);
        ASSERT_NE(s, nullptr);
        fences.push_back(s);
    }
    // Each keeps its first page: the tail it gives back is a long free span
    // (merged with any free pages after it, which the page map tells).
    std::map<std::pair<size_t, uintptr_t>, bool> free_by_key;  // (pages, start page)
    for (hc_span *f : fences) ASSERT_EQ(pc_shrink_span_in_place(f, 1), 0);
    for (hc_span *f : fences) {
        hc_span *tail = pm_lookup(f->start_page + 1);
        ASSERT_TRUE(tail != nullptr && tail->state == SPAN_FREE);
        free_by_key[{tail->page_count, tail->start_page}] = true;
    }
    pc_census c = Census();
    EXPECT_GE(c.free_spans, (size_t)kSpans);
    EXPECT_PAGE_CACHE_CONSISTENT();
    for (int i = 0; i < 2000; i++) {
        size_t want = PC_MAX_LIST_PAGES + 1 + rng() % 64;
        auto best = free_by_key.lower_bound({want, 0});
        ASSERT_NE(best, free_by_key.end());
        hc_span *got = pc_alloc_span(want, 0);
        ASSERT_NE(got, nullptr);
        ASSERT_EQ(got->start_page, best->first.second)
            << "request of " << want << " pages: the best fit is " << best->first.first
            << " pages at page " << best->first.second;
        pc_free_span(got);  // merges with its own remainder: the same free span again
    }
    EXPECT_PAGE_CACHE_CONSISTENT();
    EXPECT_EQ(Census().free_spans, c.free_spans) << "every span came back whole";
    for (hc_span *f : fences) pc_free_span(f);
    c = Census();
    EXPECT_EQ(c.free_pages, c.heap_pages);
    EXPECT_PAGE_CACHE_CONSISTENT();
}

// realloc's page-cache side: a large span shrinks by giving its tail back,
// and grows into the free pages right after it, keeping its start.
TEST(PageCache, LargeSpansGrowAndShrinkInPlace) {
    hc_span *a = pc_alloc_span(1000, 0);
    ASSERT_NE(a, nullptr);
    ASSERT_EQ(pc_shrink_span_in_place(a, 400), 0);  // at least 600 free pages follow
    const uintptr_t start = a->start_page;
    pc_census before = Census();
    ASSERT_EQ(pc_shrink_span_in_place(a, 100), 0);
    EXPECT_EQ(a->page_count, 100u);
    pc_census after = Census();
    EXPECT_EQ(after.large_pages, before.large_pages - 300);
    EXPECT_EQ(after.free_pages, before.free_pages + 300);
    EXPECT_EQ(pc_span_of(reinterpret_cast<void *>((start + 150) << HC_PAGE_SHIFT)), nullptr)
        << "the tail is no longer the block's";
    EXPECT_PAGE_CACHE_CONSISTENT();

    ASSERT_EQ(pc_grow_span_in_place(a, 250), 0) << "the tail it gave back is free";
    EXPECT_EQ(a->start_page, start);
    EXPECT_EQ(a->page_count, 250u);
    EXPECT_EQ(pc_span_of(reinterpret_cast<void *>((start + 249) << HC_PAGE_SHIFT)), a);
    EXPECT_EQ(Census().large_pages, before.large_pages - 150);
    EXPECT_PAGE_CACHE_CONSISTENT();
    // Past its first length, where it never was (when the page cache left
    // those pages free): only a real page-map update makes them a's.
    if (pc_grow_span_in_place(a, 1100) == 0)
        EXPECT_EQ(pc_span_of(reinterpret_cast<void *>((start + 1099) << HC_PAGE_SHIFT)), a);
    else
        EXPECT_EQ(a->page_count, 250u);
    EXPECT_PAGE_CACHE_CONSISTENT();
    ASSERT_EQ(pc_shrink_span_in_place(a, 250), 0);

    // The pages after it in use: no growth, nothing changed.
    hc_span *b = pc_alloc_span(100, 0);
    ASSERT_NE(b, nullptr);
    hc_span *next = pc_span_of(reinterpret_cast<void *>((start + 250) << HC_PAGE_SHIFT));
    if (next != nullptr) {
        EXPECT_EQ(pc_grow_span_in_place(a, 251), -1);
        EXPECT_EQ(a->page_count, 250u);
    }
    EXPECT_EQ(pc_grow_span_in_place(a, PC_MAX_PAGES), -1) << "no free span is that long";
    EXPECT_EQ(a->page_count, 250u);
    EXPECT_PAGE_CACHE_CONSISTENT();
    pc_free_span(b);
    pc_free_span(a);
    pc_census c = Census();
    EXPECT_EQ(c.free_pages, c.heap_pages);
    EXPECT_PAGE_CACHE_CONSISTENT();
}


// Unmapping the free spans (the out-of-memory rescue under an address-space
// limit, stage 4): their pages leave the heap and the OS's count, the
// blocks in use stay where they are and still find their spans, the
// counters add up, and the heap maps anew for the next request. A freed span
// may have merged across regions: munmap takes any range.
TEST(PageCache, UnmappingFreeSpansGivesTheirAddressSpaceBackAndKeepsTheRest) {
    std::vector<hc_span *> spans;
    for (int i = 0; i < 6; i++) {
        hc_span *s = pc_alloc_span(300, 0);  // long spans: in the tree
        ASSERT_NE(s, nullptr);
        spans.push_back(s);
    }
    hc_span *kept = pc_alloc_span(3, 0);  // in use throughout
    ASSERT_NE(kept, nullptr);
    for (hc_span *s : spans) pc_free_span(s);
    const pc_census before = Census();
    const size_t os_before = os_mapped_bytes();
    ASSERT_GT(before.free_pages, 0u);
    EXPECT_EQ(pc_unmap_free_spans(), before.free_pages << HC_PAGE_SHIFT);
    const pc_census after = Census();
    EXPECT_EQ(after.free_pages, 0u);
    EXPECT_EQ(after.free_spans, 0u);
    EXPECT_EQ(after.released_pages, 0u);
    EXPECT_EQ(after.heap_pages, before.heap_pages - before.free_pages);
    EXPECT_EQ(after.unmapped_pages - before.unmapped_pages, before.free_pages);
    EXPECT_EQ(os_before - os_mapped_bytes(), before.free_pages << HC_PAGE_SHIFT);
    EXPECT_EQ(pc_span_of(span_start(kept)), kept) << "a block in use stays found";
    EXPECT_PAGE_CACHE_CONSISTENT();
    hc_span *again = pc_alloc_span(300, 0);
    ASSERT_NE(again, nullptr) << "the heap maps anew";
    static_cast<volatile char *>(span_start(again))[span_bytes(again) - 1] = 1;
    pc_free_span(again);
    pc_free_span(kept);
    EXPECT_PAGE_CACHE_CONSISTENT();
}

}  // namespace
