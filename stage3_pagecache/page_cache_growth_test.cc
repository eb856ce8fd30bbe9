// stage3_pagecache/page_cache_growth_test.cc — where the page cache puts
// new pages, in a process of its own (a fresh heap, so every region is
// exactly the block that asked for it): regions that merge with the heap
// although other mappings come between them, large blocks cut at the
// heap's edge, a block at the edge grown in place into pages mapped
// after it; and calloc, which leaves pages that read as zero untouched.
#include <sys/mman.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "stage3_pagecache/page_cache_test_util.h"

extern "C" {
#include "common/hcmalloc.h"
#include "common/os.h"
#include "stage3_pagecache/page_policy.h"
}

namespace {

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

// At least a quarter of the heap and the minimum growth: each region is
// exactly one block, with no free remainder.
constexpr size_t kBlockPages = 256;
constexpr size_t kForeignBytes = 64 << 10;
constexpr size_t kStackBytes = 8 << 20;  // a thread's stack: too big for the gaps above

char *PageAddress(uintptr_t page) { return reinterpret_cast<char *>(page << HC_PAGE_SHIFT); }

TEST(PageCacheGrowth, RegionsMergeAcrossOtherMappingsAndEdgeBlocksStayMovable) {
    hc_span *b1 = pc_alloc_span(kBlockPages, 0);
    ASSERT_NE(b1, nullptr);
    ASSERT_EQ(Census().free_pages, 0u) << "a fresh heap: the region is the block";
    // Someone else's mapping right below the heap (or one is there already).
    void *below = mmap(PageAddress(b1->start_page) - kForeignBytes, kForeignBytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    hc_span *b2 = pc_alloc_span(kBlockPages, 0);
    ASSERT_NE(b2, nullptr);
    // A thread's stack, or metadata, mapped after the heap grew: Linux puts
    // it below the lowest mapping that leaves room, so right below a region
    // the kernel placed, and the heap could no longer grow into that one.
    void *foreign = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(foreign, MAP_FAILED);
    hc_span *b3 = pc_alloc_span(kBlockPages, 0);
    ASSERT_NE(b3, nullptr);
    EXPECT_EQ(span_end_page(b3), b2->start_page)
        << "the new region lies right below the heap's lowest, so the two merge";
    const uintptr_t low = b3->start_page, high = span_end_page(b2);
    pc_free_span(b3);
    pc_free_span(b2);
    hc_span *merged = pm_lookup(low);
    ASSERT_NE(merged, nullptr);
    EXPECT_EQ(merged->state, SPAN_FREE);
    EXPECT_EQ(merged->page_count, high - low) << "two regions, one free span";
    EXPECT_PAGE_CACHE_CONSISTENT();

    // Large blocks at the edges: the first fills the front of the free span
    // (nothing is mapped on either side of it); the next goes to the end,
    // where nothing is mapped after it, not next to the first.
    ASSERT_EQ(pm_lookup(low - 1), nullptr);
    ASSERT_EQ(pm_lookup(high), nullptr);
    const size_t big = (HC_MAX_SMALL_SIZE >> HC_PAGE_SHIFT) + 8;
    hc_span *a = pc_alloc_span(big, 0);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->start_page, low);
    hc_span *c = pc_alloc_span(big, 0);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(span_end_page(c), high) << "a large block goes against the heap's edge";
    hc_span *middle = pm_lookup(span_end_page(a));
    ASSERT_NE(middle, nullptr);
    EXPECT_EQ(middle->state, SPAN_FREE);
    EXPECT_EQ(span_end_page(middle), c->start_page) << "the free pages stay one span between the blocks";
    EXPECT_PAGE_CACHE_CONSISTENT();

    // A block at the edge still grows in place: into pages mapped right
    // after it (when free), which join the heap.
    const size_t heap_before = Census().heap_pages;
    const uintptr_t c_start = c->start_page;
    if (pc_grow_span_in_place(c, big + 64) == 0) {
        EXPECT_EQ(c->start_page, c_start);
        EXPECT_EQ(c->page_count, big + 64);
        EXPECT_EQ(pc_span_of(PageAddress(c_start + big + 63)), c);
        EXPECT_EQ(Census().heap_pages, heap_before + 64);
    } else {
        // Only when the addresses after the heap are someone else's.
        void *probe = mmap(PageAddress(high), 64 << HC_PAGE_SHIFT, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        EXPECT_EQ(probe, MAP_FAILED) << "the pages after the edge were free, yet the block did not grow";
        if (probe != MAP_FAILED) munmap(probe, 64 << HC_PAGE_SHIFT);
    }
    EXPECT_PAGE_CACHE_CONSISTENT();
    pc_free_span(c);
    pc_free_span(a);
    pc_free_span(b1);
    pc_census end = Census();
    EXPECT_EQ(end.free_pages, end.heap_pages);
    EXPECT_LE(end.free_spans, 2u) << "b1's region, and the merged rest";
    EXPECT_PAGE_CACHE_CONSISTENT();
    munmap(foreign, kStackBytes);
    if (below != MAP_FAILED) munmap(below, kForeignBytes);
}

// Pages that read as zero (never used since the OS mapped them, or
// released since) are not cleared by calloc: untouched, they stay out of
// the process's memory until the program writes them.
TEST(PageCacheGrowth, CallocLeavesPagesThatReadAsZeroUntouched) {
    pc_release_free_pages(SIZE_MAX);  // every free page reads as zero now (this process's last test)
    const size_t size = 8 << 20;
    unsigned char *p = static_cast<unsigned char *>(hc_calloc(size, 1));
    ASSERT_NE(p, nullptr);
    const size_t os_page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> resident(size / os_page);
    ASSERT_EQ(mincore(p, size, resident.data()), 0);
    size_t touched = 0;
    for (unsigned char r : resident) touched += r & 1;
    EXPECT_LT(touched, resident.size() / 16) << "calloc wrote pages that read as zero already";
    for (size_t j = 0; j < size; j += 4093) ASSERT_EQ(p[j], 0) << j;
    memset(p, 0xab, size);
    hc_free(p);
    unsigned char *q = static_cast<unsigned char *>(hc_calloc(size, 1));
    ASSERT_NE(q, nullptr);
    for (size_t j = 0; j < size; j += 4093) ASSERT_EQ(q[j], 0) << j << ": written pages are cleared";
    hc_free(q);
}

}  // namespace
