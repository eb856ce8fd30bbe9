// stage3_pagecache/page_map_order_test.cc — the page map's publication
// rule (page_map.h, "Concurrency"): a leaf, and a span in a leaf, become
// visible to lock-free readers only through a store-release, which pairs
// with the readers' acquire loads. A relaxed store passes every functional
// test, and ThreadSanitizer misses it too (the leaf's contents are mmap's
// zeroes: nothing wrote them before the store), so this test builds
// page_map.c with tests/atomic_probe.h, which notes the memory order of
// each atomic store, and reads the order back.
#include <gtest/gtest.h>

extern "C" {
#include "stage3_pagecache/page_map.h"
#include "tests/atomic_probe.h"
}

namespace {

hc_span fake_span;

bool Releases(int order) {
    return order == __ATOMIC_RELEASE || order == __ATOMIC_ACQ_REL || order == __ATOMIC_SEQ_CST;
}

const char *OrderName(int order) {
    switch (order) {
    case -1: return "no atomic store (a plain assignment?)";
    case __ATOMIC_RELAXED: return "__ATOMIC_RELAXED";
    case __ATOMIC_CONSUME: return "__ATOMIC_CONSUME";
    case __ATOMIC_ACQUIRE: return "__ATOMIC_ACQUIRE";
    case __ATOMIC_RELEASE: return "__ATOMIC_RELEASE";
    case __ATOMIC_ACQ_REL: return "__ATOMIC_ACQ_REL";
    default: return "__ATOMIC_SEQ_CST";
    }
}

TEST(PageMapOrder, ANewLeafIsPublishedWithAStoreRelease) {
    // A range over two leaves nobody has mapped yet: each is published.
    const uintptr_t first = 77 * PM_LEAF_ENTRIES + PM_LEAF_ENTRIES - 2;
    const size_t roots[] = {77, 78};
    for (size_t r : roots) ASSERT_EQ(pm_root[r], nullptr) << "the test needs unmapped leaves";
    hc_probe_reset();
    ASSERT_EQ(pm_ensure(first, 4), 0);
    for (size_t r : roots) {
        ASSERT_NE(pm_root[r], nullptr);
        int order = hc_probe_last_order(&pm_root[r]);
        EXPECT_TRUE(Releases(order))
            << "pm_root[" << r << "] was published with " << OrderName(order)
            << ": a reader (pm_leaf_of, an acquire load) may then see the pointer before "
               "the leaf's contents; publish it with __atomic_store_n(..., __ATOMIC_RELEASE)";
    }
}

TEST(PageMapOrder, ASpanIsRegisteredWithAStoreRelease) {
    const uintptr_t page = 90 * PM_LEAF_ENTRIES + 3;
    ASSERT_EQ(pm_ensure(page, 3), 0);
    pm_leaf *leaf = pm_root[90];
    hc_probe_reset();
    pm_set(page, &fake_span);
    pm_set_range(page + 1, 2, &fake_span);
    for (uintptr_t p = page; p < page + 3; p++) {
        int order = hc_probe_last_order(&leaf->spans[p & (PM_LEAF_ENTRIES - 1)]);
        EXPECT_TRUE(Releases(order)) << "page " << p << "'s span was stored with " << OrderName(order)
                                     << ": a reader that finds the span must find its fields";
    }
    EXPECT_EQ(pm_lookup(page + 2), &fake_span);
}

}  // namespace
