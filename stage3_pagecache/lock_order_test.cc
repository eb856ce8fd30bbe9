// stage3_pagecache/lock_order_test.cc — the lock order of page_cache.h,
// at every entry into the page cache: no bucket lock is held when
// pc_alloc_span, pc_alloc_span_placed (the central cache's new spans) or
// pc_free_span is called. The page cache takes its own lock and may map
// from the OS under it; a thread that enters it with a bucket lock held
// makes every thread of that class wait (and a thread already in the page
// cache that needs the bucket deadlocks).
//
// This binary links with --wrap for each of the three (BUILD's linkopts):
// every call from another object file reaches the __wrap_ functions below
// first, which count the bucket locks that are busy (tests/lock_probe.h:
// in a one-thread test, busy means held by this thread). central_cache_test's os_map observer sees only the calls that
// map; a span given back to the page cache under a bucket lock never maps.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <utility>
#include <vector>

#include "tests/lock_probe.h"

extern "C" {
#include "common/hcmalloc.h"
#include "stage3_pagecache/page_cache.h"
}

namespace {

std::atomic<int> entries_with_a_bucket_lock{0};
std::atomic<int> page_cache_entries{0};
std::atomic<int> placed_entries{0};
std::atomic<bool> watch_entries{false};

void NoteEntry() {
    if (!watch_entries.load()) return;
    page_cache_entries++;
    entries_with_a_bucket_lock += hc_test::HeldBucketLocks() > 0;
}

}  // namespace

extern "C" {
hc_span *__real_pc_alloc_span(size_t pages, unsigned size_class);
void __real_pc_free_span(hc_span *span);
hc_span *__wrap_pc_alloc_span(size_t pages, unsigned size_class) {
    NoteEntry();
    return __real_pc_alloc_span(pages, size_class);
}
hc_span *__real_pc_alloc_span_placed(size_t pages, unsigned size_class, unsigned place);
hc_span *__wrap_pc_alloc_span_placed(size_t pages, unsigned size_class, unsigned place) {
    NoteEntry();
    if (watch_entries.load()) placed_entries++;
    return __real_pc_alloc_span_placed(pages, size_class, place);
}
void __wrap_pc_free_span(hc_span *span) {
    NoteEntry();
    __real_pc_free_span(span);
}
}

namespace {

TEST(LockOrder, ThePageCacheIsNeverEnteredWithABucketLockHeld) {
    // One thread: spans taken for many classes (a few spans' worth each,
    // large blocks too), then every object freed and flushed, so that the
    // empty spans beyond each class's spare go back.
    std::thread([] {
        watch_entries = true;
        std::vector<std::pair<void *, size_t>> got;
        for (unsigned cls = 1; cls < HC_NUM_CLASSES; cls += 3)
            for (size_t i = 0; i < 3 * (sc_span_pages(cls) << HC_PAGE_SHIFT) / sc_size(cls) + 1; i++)
                got.emplace_back(hc_malloc(sc_size(cls)), sc_size(cls));
        for (size_t size : {(size_t)300 << 10, (size_t)3 << 20}) got.emplace_back(hc_malloc(size), size);
        for (auto &[p, size] : got) hc_free_sized(p, size);
        hc_thread_flush();
        hc_release_free_memory();
        watch_entries = false;
    }).join();
    EXPECT_GT(page_cache_entries.load(), 0) << "the wrap saw no call: check the BUILD's linkopts";
    EXPECT_GT(placed_entries.load(), 0) << "the central cache's new spans went unwatched: check the linkopts";
    EXPECT_EQ(entries_with_a_bucket_lock.load(), 0)
        << "pc_alloc_span, pc_alloc_span_placed or pc_free_span was called with a bucket lock held: it "
           "takes its own lock (and may map), so give spans back after the bucket lock is dropped";
}

}  // namespace
