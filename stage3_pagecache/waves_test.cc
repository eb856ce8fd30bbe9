// stage3_pagecache/waves_test.cc — 1 GiB of small objects, allocated and
// freed in waves; afterwards the page cache must hold the whole heap again,
// merged back into long spans (what stage 2, which never gives a span back,
// cannot do). Runs in a process of its own so nothing else holds objects.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <thread>
#include <vector>

#include "stage3_pagecache/page_cache_test_util.h"

extern "C" {
#include "common/hcmalloc.h"
}
#include "tests/stats_util.h"

namespace {

constexpr size_t kTotalBytes = (size_t)1 << 30;
constexpr size_t kWaveBytes = kTotalBytes / 4;

using hc_test::Stats;

struct Block {
    void *ptr;
    size_t size;
};

TEST(Waves, OneGiBOfSmallObjectsMergesBackIntoLongSpans) {
    // The waves run on a thread that flushes its cache when done, as stage 4
    // will do for every exiting thread.
    std::thread([] {
        std::mt19937_64 rng(42);
        std::vector<Block> live;
        size_t allocated = 0;
        for (int wave = 0; wave < 4; wave++) {
            // Allocate a quarter GiB of mixed small sizes...
            for (size_t bytes = 0; bytes < kWaveBytes;) {
                size_t size = rng() % 4 ? 16 + rng() % 1009 : 1024 + rng() % 15000;
                void *p = hc_malloc(size);
                ASSERT_NE(p, nullptr);
                *static_cast<size_t *>(p) = size;  // touch it, and check it at free
                live.push_back({p, size});
                bytes += size;
            }
            allocated += kWaveBytes;
            // ...then free a random half of everything live, scattered
            // across all spans, so most spans end partly used.
            std::shuffle(live.begin(), live.end(), rng);
            size_t keep = live.size() / 2;
            for (size_t i = keep; i < live.size(); i++) {
                ASSERT_EQ(*static_cast<size_t *>(live[i].ptr), live[i].size);
                if (i % 2) hc_free(live[i].ptr);
                else hc_free_sized(live[i].ptr, live[i].size);
            }
            live.resize(keep);
            hc_stats s = Stats();
            std::printf("wave %d: %zu MiB allocated so far, %zu MiB in use, %zu MiB free in the page "
                        "cache, %zu MiB mapped\n",
                        wave, allocated >> 20, s.bytes_in_use >> 20, s.page_cache_free_bytes >> 20,
                        s.os_mapped_bytes >> 20);
        }
        for (const Block &b : live) hc_free(b.ptr);
        hc_thread_flush();
    }).join();
    // The central cache keeps some for reuse (transfer caches, a spare span
    // per class): this gives them back to the page cache too.
    hc_release_free_memory();

    hc_stats s = Stats();
    pc_census c = Census();
    std::printf("after the waves: in use %zu, thread caches %zu, central %zu, page cache free %zu MiB, "
                "mapped %zu MiB, metadata %zu KiB; %zu free spans in %zu regions, longest %zu MiB\n",
                s.bytes_in_use, s.thread_cache_bytes, s.central_cache_bytes,
                s.page_cache_free_bytes >> 20, s.os_mapped_bytes >> 20, s.metadata_bytes >> 10,
                c.free_spans, c.regions, (c.largest_free_pages * HC_PAGE_SIZE) >> 20);

    // Every object is back in its span, so every span's count reached zero
    // and every span went back to the page cache: nothing is left above it.
    EXPECT_EQ(s.thread_cache_bytes, 0u);
    EXPECT_EQ(s.central_cache_bytes, 0u);
    EXPECT_EQ(s.bytes_in_use, 0u);
    EXPECT_EQ(s.page_cache_free_bytes, c.heap_pages * HC_PAGE_SIZE) << "the whole heap is free";
    EXPECT_GE(s.page_cache_free_bytes, kWaveBytes);
    // Merged: one free span per region at most, the longest a big share of the heap.
    EXPECT_LE(c.free_spans, c.regions);
    EXPECT_GE(c.largest_free_pages * HC_PAGE_SIZE, s.page_cache_free_bytes / 8);
    EXPECT_PAGE_CACHE_CONSISTENT();

    // And hc_get_stats alone shows it: a block as long as the longest span
    // is served without mapping any new pages for the heap, which only a
    // merged span can do. (Its record may take a new chunk of metadata:
    // the pool of spans of no place, which the small spans never used.)
    size_t big = std::min(c.largest_free_pages * HC_PAGE_SIZE, PC_DIRECT_MAP_BYTES - HC_PAGE_SIZE);
    ASSERT_GT(big, (size_t)16 << 20);
    void *p = hc_malloc(big);
    ASSERT_NE(p, nullptr);
    const hc_stats after = Stats();
    EXPECT_EQ(after.os_mapped_bytes - after.metadata_bytes, s.os_mapped_bytes - s.metadata_bytes)
        << "a " << (big >> 20) << " MiB block came from merged small-object spans";
    hc_free(p);
}

}  // namespace
