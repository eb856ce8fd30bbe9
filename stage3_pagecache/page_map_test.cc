// stage3_pagecache/page_map_test.cc — the radix tree on its own.
//
// The page map is one global tree, so each test works in its own part of the
// address space. Spans here are fake records: the map stores pointers and
// never looks inside them.
#include <errno.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

extern "C" {
#include "common/os.h"
#include "common/pool.h"
#include "stage3_pagecache/page_map.h"
}

namespace {

constexpr uintptr_t kLastPage = PM_PAGE_ID_LIMIT - 1;
constexpr uintptr_t kPagesPerLeaf = PM_LEAF_ENTRIES;

hc_span fake_spans[64];

TEST(PageMap, BitSplitCoversThe47BitAddressSpace) {
    EXPECT_EQ(PM_ROOT_BITS + PM_LEAF_BITS, 47 - HC_PAGE_SHIFT);
    EXPECT_EQ(sizeof(pm_leaf), PM_LEAF_ENTRIES * (sizeof(void *) + 2 * sizeof(uint64_t)))
        << "a span pointer and hc_free's two words per page";
    // The highest user address (just under 2^47) has the last page id.
    EXPECT_EQ(span_page_of(reinterpret_cast<void *>(((uintptr_t)1 << 47) - 1)), kLastPage);
}

TEST(PageMap, UnregisteredAndNonUserPagesAreNull) {
    EXPECT_EQ(pm_lookup(12345), nullptr);
    EXPECT_EQ(pm_lookup(PM_PAGE_ID_LIMIT), nullptr) << "first page above user space";
    EXPECT_EQ(pm_lookup(span_page_of(reinterpret_cast<void *>(0xffff800000001000ull))), nullptr)
        << "a kernel address";
    EXPECT_EQ(pm_lookup(UINTPTR_MAX >> HC_PAGE_SHIFT), nullptr);
}

TEST(PageMap, FirstAndLastPageOfTheAddressSpace) {
    ASSERT_EQ(pm_ensure(0, 1), 0);
    ASSERT_EQ(pm_ensure(kLastPage, 1), 0);
    pm_set(0, &fake_spans[0]);
    pm_set(kLastPage, &fake_spans[1]);
    EXPECT_EQ(pm_lookup(0), &fake_spans[0]);
    EXPECT_EQ(pm_lookup(kLastPage), &fake_spans[1]);
    EXPECT_EQ(pm_lookup(1), nullptr);
    EXPECT_EQ(pm_lookup(kLastPage - 1), nullptr);
    pm_set(0, nullptr);
    pm_set(kLastPage, nullptr);
    EXPECT_EQ(pm_lookup(0), nullptr);
    EXPECT_EQ(pm_lookup(kLastPage), nullptr);
}

TEST(PageMap, SparseIdsFarApartEachGetTheirOwnNodes) {
    // Ids in different root slots, and two in one leaf.
    const uintptr_t ids[] = {
        3 * kPagesPerLeaf + 7,
        4 * kPagesPerLeaf + 7,                      // the next leaf
        3 * kPagesPerLeaf + 9,                      // same leaf as the first
        100 * kPagesPerLeaf + 123456,
        (uintptr_t)1 << 33,
        kLastPage - 5 * kPagesPerLeaf,
    };
    pm_usage before, after;
    pm_get_usage(&before);
    size_t metadata_before = pool_mapped_bytes();
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        ASSERT_EQ(pm_ensure(ids[i], 1), 0);
        pm_set(ids[i], &fake_spans[i]);
    }
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        EXPECT_EQ(pm_lookup(ids[i]), &fake_spans[i]) << i;
        EXPECT_EQ(pm_lookup(ids[i] + 1), nullptr) << "neighbour of " << i;
    }
    pm_get_usage(&after);
    // 5 leaves: ids 0 and 2 share one.
    EXPECT_EQ(after.leaf_nodes - before.leaf_nodes, 5u);
    EXPECT_EQ(after.mapped_bytes - before.mapped_bytes, 5 * sizeof(pm_leaf));
    EXPECT_EQ(pool_mapped_bytes() - metadata_before, after.mapped_bytes - before.mapped_bytes)
        << "the nodes count as metadata";
    for (uintptr_t id : ids) pm_set(id, nullptr);
}

TEST(PageMap, RangesCrossLeafBoundaries) {
    const uintptr_t first = 7 * kPagesPerLeaf + PM_LEAF_ENTRIES - 10;
    const size_t count = 2 * PM_LEAF_ENTRIES + 20;  // touches 4 leaves
    pm_usage before, after;
    pm_get_usage(&before);
    ASSERT_EQ(pm_ensure(first, count), 0);
    pm_get_usage(&after);
    EXPECT_EQ(after.leaf_nodes - before.leaf_nodes, 4u);
    pm_set_range(first, count, &fake_spans[10]);
    EXPECT_EQ(pm_lookup(first - 1), nullptr);
    for (uintptr_t p = first; p < first + count; p++) ASSERT_EQ(pm_lookup(p), &fake_spans[10]) << p;
    EXPECT_EQ(pm_lookup(first + count), nullptr);
    ASSERT_EQ(pm_ensure(first, count), 0);
    pm_get_usage(&before);
    EXPECT_EQ(before.leaf_nodes, after.leaf_nodes) << "ensuring again maps nothing";
    pm_set_range(first, count, nullptr);
    for (uintptr_t p = first; p < first + count; p++) ASSERT_EQ(pm_lookup(p), nullptr) << p;
}

// The class of a page is what hc_free reads: set for a run of pages across
// a leaf boundary, it is exactly there, the span pointers are untouched, and
// clearing it makes every page read 0 again.
TEST(PageMap, ClassesOfARunOfPagesAcrossALeafBoundary) {
    const uintptr_t first = 11 * kPagesPerLeaf - 3;
    const size_t count = 6;
    ASSERT_EQ(pm_ensure(first - 1, count + 2), 0);
    pm_set_range(first, count, &fake_spans[12]);
    const unsigned cls = sc_index(48);
    pm_set_class_range(first, count, cls);
    auto addr = [](uintptr_t page, uintptr_t offset) {
        return reinterpret_cast<void *>((page << HC_PAGE_SHIFT) + offset);
    };
    EXPECT_EQ(pm_class_of(addr(first - 1, 0)), 0u) << "the page before";
    EXPECT_EQ(pm_class_of(addr(first + count, 0)), 0u) << "the page after";
    for (uintptr_t p = first; p < first + count; p++) {
        EXPECT_EQ(pm_class_of(addr(p, 0)), cls) << p;
        EXPECT_EQ(pm_class_of(addr(p, HC_PAGE_SIZE - 1)), cls) << "any address in the page";
        EXPECT_EQ(pm_lookup(p), &fake_spans[12]) << "the span pointer is untouched";
    }
    pm_set_class_range(first, count, 0);
    for (uintptr_t p = first; p < first + count; p++) EXPECT_EQ(pm_class_of(addr(p, 0)), 0u) << p;
    pm_set_range(first, count, nullptr);
}

TEST(PageMap, ClassOfAnAddressOutsideTheMapIsZero) {
    EXPECT_EQ(pm_class_of(nullptr), 0u);
    EXPECT_EQ(pm_class_of(reinterpret_cast<void *>(0xffff800000001000ull)), 0u) << "a kernel address";
    EXPECT_EQ(pm_class_of(reinterpret_cast<void *>(UINTPTR_MAX)), 0u);
    EXPECT_EQ(pm_class_of(reinterpret_cast<void *>(uintptr_t{1500} << 30)), 0u) << "no leaf there";
}

// hc_free's test is exact: for a span of every class, at every multiple of
// 8 bytes of its pages (and one byte past each), it says yes exactly at
// the starts of the span's objects; and never for the same addresses above
// user space (they alias the same page-map entries).
TEST(PageMap, ObjectStartTestIsExactForEveryClass) {
    const uintptr_t first = 14 * kPagesPerLeaf + 3;
    for (unsigned cls = 1; cls < HC_NUM_CLASSES; cls++) {
        const size_t size = sc_size(cls), pages = sc_span_pages(cls);
        const size_t bytes = pages << HC_PAGE_SHIFT, objects = bytes / size;
        ASSERT_EQ(pm_ensure(first, pages), 0);
        pm_set_class_range(first, pages, cls);
        const uintptr_t start = first << HC_PAGE_SHIFT;
        size_t accepted = 0;
        for (uintptr_t offset = 0; offset < bytes; offset += 8) {
            const bool object_start = offset % size == 0 && offset / size < objects;
            size_t class_offset = 0;
            void *p = reinterpret_cast<void *>(start + offset);
            ASSERT_EQ(pm_small_object_start(p, &class_offset), object_start ? 1 : 0)
                << size << "-byte class, offset " << offset;
            if (object_start) {
                accepted++;
                EXPECT_EQ(class_offset, cls * PM_CLASS_STRIDE);
            }
            ASSERT_EQ(pm_small_object_start(reinterpret_cast<void *>(start + offset + 1), &class_offset), 0)
                << size << "-byte class, offset " << offset + 1;
            for (int high : {47, 52, 63})
                ASSERT_EQ(pm_small_object_start(reinterpret_cast<void *>((start + offset) | (uintptr_t{1} << high)),
                                                &class_offset),
                          0)
                    << size << "-byte class, offset " << offset << ", bit " << high;
        }
        EXPECT_EQ(accepted, objects) << size << "-byte class: every object, nothing else";
        pm_set_class_range(first, pages, 0);
    }
}

// A span too short for its class (page_map_test's own: the buckets never
// make one) accepts no address but NULL's.
TEST(PageMap, ObjectStartTestOfASpanWithNoObjectAcceptsNothing) {
    const uintptr_t page = 13 * kPagesPerLeaf;
    ASSERT_EQ(pm_ensure(page, 1), 0);
    const unsigned cls = sc_index(HC_MAX_SMALL_SIZE);
    pm_set_class_range(page, 1, cls);
    size_t class_offset;
    for (uintptr_t offset = 0; offset < HC_PAGE_SIZE; offset += 16)
        ASSERT_EQ(pm_small_object_start(reinterpret_cast<void *>((page << HC_PAGE_SHIFT) + offset), &class_offset), 0)
            << offset;
    pm_set_class_range(page, 1, 0);
}

TEST(PageMap, EnsureOutsideUserSpaceOrWhenTheOsRefusesIsENOMEM) {
    errno = 0;
    EXPECT_EQ(pm_ensure(kLastPage, 2), -1);
    EXPECT_EQ(errno, ENOMEM);
    errno = 0;
    EXPECT_EQ(pm_ensure(PM_PAGE_ID_LIMIT, 1), -1);
    EXPECT_EQ(errno, ENOMEM);

    const uintptr_t fresh = 1500 * kPagesPerLeaf;  // a root slot no other test uses
    os_fail_next_maps(1);
    errno = 0;
    EXPECT_EQ(pm_ensure(fresh, 1), -1);
    EXPECT_EQ(errno, ENOMEM);
    EXPECT_EQ(pm_lookup(fresh), nullptr);
    os_fail_next_maps(0);
    ASSERT_EQ(pm_ensure(fresh, 1), 0) << "works again once the OS does";
    pm_set(fresh, &fake_spans[3]);
    EXPECT_EQ(pm_lookup(fresh), &fake_spans[3]);
}

// One writer keeps extending the tree (new leaves) and registering pages and
// their classes while readers look them up without a lock. A reader must
// see, for a page the writer has announced, exactly its span and class; for
// any other page, nothing or those (never a torn or foreign value). Run under
// ThreadSanitizer by page_map_test_tsan.
TEST(PageMap, ConcurrentReadersWhileAWriterExtendsTheTree) {
    constexpr int kPages = 600;
    constexpr int kReaders = 3;
    std::vector<uintptr_t> ids(kPages);
    for (int i = 0; i < kPages; i++)  // a new leaf every 4 pages
        ids[i] = (uintptr_t)(2000 + i / 4) * kPagesPerLeaf + (uintptr_t)(i % 4) * 4099 + 17;
    std::atomic<int> published{0};
    std::atomic<long> bad{0};
    std::atomic<bool> done{false};

    std::vector<std::thread> readers;
    for (int r = 0; r < kReaders; r++)
        readers.emplace_back([&, r] {
            unsigned x = 12345u + r;
            while (!done.load(std::memory_order_acquire)) {
                int n = published.load(std::memory_order_acquire);
                for (int k = 0; k < 64; k++) {
                    x = x * 1103515245u + 12345u;
                    int i = (int)(x % kPages);
                    hc_span *want = &fake_spans[i % 64];
                    hc_span *got = pm_lookup(ids[i]);
                    if (i < n ? got != want : (got != nullptr && got != want)) bad++;
                    if (pm_lookup(ids[i] + 1) != nullptr) bad++;  // never registered
                    unsigned want_cls = 1 + i % (HC_NUM_CLASSES - 1);
                    unsigned cls = pm_class_of(reinterpret_cast<void *>(ids[i] << HC_PAGE_SHIFT));
                    if (i < n ? cls != want_cls : (cls != 0 && cls != want_cls)) bad++;
                }
            }
        });
    for (int i = 0; i < kPages; i++) {
        ASSERT_EQ(pm_ensure(ids[i], 1), 0);
        pm_set(ids[i], &fake_spans[i % 64]);
        pm_set_class_range(ids[i], 1, 1 + i % (HC_NUM_CLASSES - 1));
        published.store(i + 1, std::memory_order_release);
        if (i % 100 == 0) std::this_thread::yield();
    }
    done.store(true, std::memory_order_release);
    for (auto &t : readers) t.join();
    EXPECT_EQ(bad.load(), 0);
    for (int i = 0; i < kPages; i++) ASSERT_EQ(pm_lookup(ids[i]), &fake_spans[i % 64]);
}

// hc_free's lookup (pm_small_object_start): the biased class root, the
// object-start test that also turns away addresses above user space, and
// pages of class 0 and NULL, which pass with class 0 once their leaf exists
// (hc_free then meets lists[0], always full).
TEST(PageMap, SmallObjectStartIsTheStartOfAnObjectOfASmallSpan) {
    const uintptr_t first = 17 * kPagesPerLeaf + 5; // not a leaf's first page: the bias matters
    ASSERT_EQ(pm_ensure(first, 2), 0);
    const unsigned cls = sc_index(48);
    pm_set_class_range(first, 1, cls);
    auto addr = [](uintptr_t page, uintptr_t offset) {
        return reinterpret_cast<void *>((page << HC_PAGE_SHIFT) + offset);
    };
    size_t offset = 0;
    EXPECT_EQ(pm_small_object_start(addr(first, 48 * 3), &offset), 1) << "an object's start";
    EXPECT_EQ(offset, cls * PM_CLASS_STRIDE) << "the class times the stride";
    EXPECT_EQ(pm_small_object_start(addr(first, 48 * 3 + 8), &offset), 0) << "inside an object";
    offset = 1;
    EXPECT_EQ(pm_small_object_start(addr(first + 1, 16), &offset), 1) << "a page of class 0 passes...";
    EXPECT_EQ(offset, 0u) << "...with class 0, which hc_free's lists[0] turns away";
    EXPECT_EQ(pm_small_object_start(addr(first + 2 * kPagesPerLeaf, 0), &offset), 0) << "no leaf there";
    void *alias = reinterpret_cast<void *>(reinterpret_cast<uintptr_t>(addr(first, 48 * 3)) | (uintptr_t{1} << 63));
    EXPECT_EQ(pm_small_object_start(alias, &offset), 0) << "above user space, aliasing an object's start";
    ASSERT_EQ(pm_ensure(0, 1), 0); // the first leaf exists: NULL finds it
    offset = 1;
    EXPECT_EQ(pm_small_object_start(nullptr, &offset), 1) << "NULL passes the test...";
    EXPECT_EQ(offset, 0u) << "...with class 0, which hc_free's lists[0] turns away";
    pm_set_class_range(first, 1, 0);
}

}  // namespace
