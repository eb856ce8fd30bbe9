// stage4_reclaim/heap_limit_test.cc — HCMALLOC_HEAP_LIMIT_MB=64 (set by the
// BUILD target): the page cache never maps past 64 MiB of heap; past it a
// request fails with ENOMEM, the program goes on, memory freed is usable
// again, and the stats and properties count the refusals.
#include <errno.h>
#include <gtest/gtest.h>

#include <vector>

#include "common/hcmalloc.h"
#include "common/size_class.h"

namespace {

constexpr size_t kLimit = size_t{64} << 20;

size_t property(const char *name) {
    size_t value = 0;
    EXPECT_EQ(hc_get_property(name, &value), 1) << name;
    return value;
}

// What the limit counts: what the page cache maps (all but the metadata).
size_t heap_mapped() {
    hc_stats s;
    hc_get_stats(&s);
    return s.os_mapped_bytes - s.metadata_bytes;
}

TEST(HeapLimit, ReportedAsSet) {
    EXPECT_EQ(property("hcmalloc.heap_limit_bytes"), kLimit);
    hc_stats s;
    hc_get_stats(&s);
    EXPECT_EQ(s.heap_limit_bytes, kLimit);
}

// A block mapped directly (64 MiB and more) counts too: one past the limit
// cannot be had.
TEST(HeapLimit, DirectMappingsCount) {
    size_t hits_before = property("hcmalloc.heap_limit_hits");
    errno = 0;
    EXPECT_EQ(hc_malloc(kLimit + HC_PAGE_SIZE), nullptr); // one page too many
    EXPECT_EQ(errno, ENOMEM);
    // Refused, then refused again by the one retry after the caches went back.
    EXPECT_EQ(property("hcmalloc.heap_limit_hits"), hits_before + 2);
    void *p = hc_malloc(size_t{16} << 20); // under the limit: fine
    EXPECT_NE(p, nullptr);
    hc_free(p);
}

TEST(HeapLimit, LargeBlocksStopAtTheLimitWithEnomemAndComeBackWhenFreed) {
    size_t hits_before = property("hcmalloc.heap_limit_hits");
    std::vector<void *> blocks;
    void *p;
    errno = 0;
    while ((p = hc_malloc(1 << 20)) != nullptr) {
        blocks.push_back(p);
        ASSERT_LE(heap_mapped(), kLimit + (HC_PAGE_SIZE * 64)) << "past the limit";
        ASSERT_LT(blocks.size(), 200u) << "the limit never refused";
    }
    EXPECT_EQ(errno, ENOMEM);
    EXPECT_GE(blocks.size(), 50u); // most of the 64 MiB was usable
    EXPECT_GT(property("hcmalloc.heap_limit_hits"), hits_before);
    // The program goes on: what it frees is reused under the limit.
    hc_free(blocks.back());
    blocks.pop_back();
    p = hc_malloc(1 << 20);
    EXPECT_NE(p, nullptr);
    blocks.push_back(p);
    for (void *b : blocks) hc_free(b);
}

TEST(HeapLimit, SmallObjectsStopToo) {
    std::vector<void *> objects;
    void *p;
    while ((p = hc_malloc(4000)) != nullptr) {
        objects.push_back(p);
        ASSERT_LT(objects.size(), 1u << 20) << "the limit never refused";
    }
    EXPECT_EQ(errno, ENOMEM);
    EXPECT_LE(heap_mapped(), kLimit + (HC_PAGE_SIZE * 64));
    for (void *o : objects) hc_free(o);
    hc_release_free_memory();
    EXPECT_NE(p = hc_malloc(4000), nullptr);
    hc_free(p);
}

}  // namespace
