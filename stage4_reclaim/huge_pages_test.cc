// stage4_reclaim/huge_pages_test.cc — HCMALLOC_HUGE_HEAP_MB=4 (the
// default, set by the BUILD target): once the heap is 4 MiB, each region it
// grows by starts on a huge page's boundary and is advised MADV_HUGEPAGE;
// the regions before are left in 4 KiB pages; with 0, none is; unset, the
// default holds. The kernel's own view, /proc/self/smaps, is what the test
// reads: a region's mapping ("VMA") and its flags ("hg": advised huge).
#include <stdlib.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "common/hcmalloc.h"

namespace {

constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
constexpr size_t kBlock = size_t{1} << 20;  // a large block: a span of its own

struct Mapping {
    uintptr_t start = 0;
    bool advised_huge = false;
};

// The mapping that holds `p`, from /proc/self/smaps: the kernel's view, not
// the allocator's (its stats would only repeat what the code believes).
Mapping MappingOf(const void *p) {
    Mapping found;
    FILE *smaps = fopen("/proc/self/smaps", "r");
    if (smaps == nullptr) return found;
    char line[512];
    bool inside = false;
    const uintptr_t at = reinterpret_cast<uintptr_t>(p);
    while (fgets(line, sizeof line, smaps) != nullptr) {
        unsigned long start, end;
        if (sscanf(line, "%lx-%lx ", &start, &end) == 2) {
            inside = start <= at && at < end;
            if (inside) found.start = start;
        } else if (inside && strncmp(line, "VmFlags:", 8) == 0) {
            found.advised_huge = strstr(line, " hg") != nullptr;
            break;
        }
    }
    fclose(smaps);
    return found;
}

// What the page cache has mapped: the heap's regions (the metadata apart).
size_t HeapMapped() {
    size_t mapped = 0, metadata = 0;
    hc_get_property("generic.heap_size", &mapped);
    hc_get_property("hcmalloc.metadata_bytes", &metadata);
    return mapped - metadata;
}

// A kernel built without transparent huge pages refuses MADV_HUGEPAGE, so
// no region can carry "hg" there: the tests that look for it skip.
bool KernelHasHugePages() {
    FILE *thp = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (thp == nullptr) return false;
    fclose(thp);
    return true;
}
#define SKIP_WITHOUT_HUGE_PAGES()                                                                      \
    if (!KernelHasHugePages())                                                                         \
    GTEST_SKIP() << "this kernel has no transparent huge pages: MADV_HUGEPAGE is refused"

TEST(HugePages, PastTheOptionTheHeapGrowsInWholeAlignedHugePages) {
    SKIP_WITHOUT_HUGE_PAGES();
    std::vector<void *> blocks;
    void *first = hc_malloc(kBlock);
    ASSERT_NE(first, nullptr);
    blocks.push_back(first);
    ASSERT_LT(HeapMapped(), size_t{4} << 20) << "the first region is grown before the heap is 4 MiB";
    const Mapping small = MappingOf(first);
    ASSERT_NE(small.start, 0u);
    EXPECT_FALSE(small.advised_huge) << "below HCMALLOC_HUGE_HEAP_MB the heap keeps 4 KiB pages";

    // Grow the heap past 4 MiB, then until a block lies in a region grown after.
    void *late = nullptr;
    for (int i = 0; i < 64 && late == nullptr; i++) {
        const size_t before = HeapMapped();
        void *b = hc_malloc(kBlock);
        ASSERT_NE(b, nullptr);
        blocks.push_back(b);
        if (before >= (size_t{4} << 20) && HeapMapped() > before) late = b;
    }
    ASSERT_NE(late, nullptr) << "the heap never grew past 4 MiB";
    const Mapping huge = MappingOf(late);
    EXPECT_TRUE(huge.advised_huge) << "a region grown past 4 MiB of heap asks for huge pages";
    EXPECT_EQ(huge.start % kHugePage, 0u) << "and starts on a huge page's boundary";
    for (void *b : blocks) hc_free(b);
}

// HCMALLOC_HUGE_HEAP_MB=0: no huge pages, however big the heap (a child
// process, which reads its environment afresh).
TEST(HugePages, NoneWhenTurnedOff) {
    testing::FLAGS_gtest_death_test_style = "threadsafe";
    setenv("HCMALLOC_HUGE_HEAP_MB", "0", 1);
    EXPECT_EXIT(
        {
            int advised = 0;
            for (int i = 0; i < 32; i++) advised += MappingOf(hc_malloc(kBlock)).advised_huge;
            _exit(advised == 0 && HeapMapped() >= (size_t{16} << 20) ? 0 : 1);
        },
        testing::ExitedWithCode(0), "");
    setenv("HCMALLOC_HUGE_HEAP_MB", "4", 1);
}

// And with no variable at all, the default: a heap that grows to 16 MiB has
// regions advised huge.
TEST(HugePages, OnByDefault) {
    SKIP_WITHOUT_HUGE_PAGES();
    testing::FLAGS_gtest_death_test_style = "threadsafe";
    unsetenv("HCMALLOC_HUGE_HEAP_MB");
    EXPECT_EXIT(
        {
            int advised = 0;
            for (int i = 0; i < 16; i++) advised += MappingOf(hc_malloc(kBlock)).advised_huge;
            _exit(advised > 0 ? 0 : 1);
        },
        testing::ExitedWithCode(0), "");
    setenv("HCMALLOC_HUGE_HEAP_MB", "4", 1);
}

}  // namespace
