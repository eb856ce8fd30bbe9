// common/os_test.cc — mapping, failure reporting, the fault-injection hooks.
#include <errno.h>
#include <gtest/gtest.h>
#include <stdint.h>
#include <sys/mman.h>

extern "C" {
#include "common/os.h"
}

namespace {

TEST(Os, MapsZeroedMemoryAndCountsIt) {
    size_t before = os_mapped_bytes();
    char *p = static_cast<char *>(os_map(1 << 20));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(os_mapped_bytes(), before + (1 << 20));
    for (size_t i = 0; i < (1 << 20); i += 4096) EXPECT_EQ(p[i], 0);
    p[0] = 1;
    EXPECT_EQ(os_release(p, 1 << 20), 0);
    EXPECT_EQ(p[0], 0) << "MADV_DONTNEED gives back a zero page";
    os_unmap(p, 1 << 20);
    EXPECT_EQ(os_mapped_bytes(), before);
}

TEST(Os, AlignedMappingIsAlignedAndTrimmed) {
    size_t before = os_mapped_bytes();
    void *p = os_map_aligned(1 << 16, 1 << 21);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % (1 << 21), 0u);
    EXPECT_EQ(os_mapped_bytes(), before + (1 << 16)) << "the extra was unmapped";
    os_unmap(p, 1 << 16);
}

TEST(Os, ImpossibleSizeIsENOMEM) {
    errno = 0;
    EXPECT_EQ(os_map(SIZE_MAX & ~(size_t)4095), nullptr);
    EXPECT_EQ(errno, ENOMEM);
}

// free() calls these two: a refusal by the kernel is in the result (or the
// count), never in errno.
TEST(Os, UnmapAndReleaseKeepErrnoWhenTheKernelRefuses) {
    char *p = static_cast<char *>(os_map(8192));
    ASSERT_NE(p, nullptr);
    size_t mapped = os_mapped_bytes();
    errno = 4242;
    EXPECT_EQ(os_release(p + 1, 4096), -1) << "madvise of an unaligned address";
    EXPECT_EQ(errno, 4242);
    os_unmap(p + 1, 4096);  // munmap refuses an unaligned address: EINVAL
    EXPECT_EQ(errno, 4242);
    EXPECT_EQ(os_mapped_bytes(), mapped) << "a refused unmap is not counted";
    os_unmap(p, 8192);
}

// os_populate backs the pages at once: a fresh mapping has none resident,
// and after the call every page is, before anything was written; errno is
// left as it was.
TEST(Os, PopulateBacksThePagesBeforeTheyAreWritten) {
    const size_t page = os_page_size(), pages = 8;
    char *p = static_cast<char *>(os_map(pages * page));
    ASSERT_NE(p, nullptr);
    unsigned char resident[8];
    ASSERT_EQ(mincore(p, pages * page, resident), 0);
    for (size_t i = 0; i < pages; i++) EXPECT_EQ(resident[i] & 1, 0) << "page " << i << " of a fresh mapping";
    errno = 1234;
    os_populate(p, pages * page);
    EXPECT_EQ(errno, 1234);
    ASSERT_EQ(mincore(p, pages * page, resident), 0);
    for (size_t i = 0; i < pages; i++) EXPECT_EQ(resident[i] & 1, 1) << "page " << i << " backed";
    for (size_t i = 0; i < pages * page; i++) ASSERT_EQ(p[i], 0) << "still zero";
    os_unmap(p, pages * page);
}

TEST(Os, FailNextMapsFailsExactlyThatMany) {
    unsigned long injected = os_injected_failures();
    os_fail_next_maps(2);
    errno = 0;
    EXPECT_EQ(os_map(4096), nullptr);
    EXPECT_EQ(errno, ENOMEM);
    EXPECT_EQ(os_map_aligned(4096, 1 << 16), nullptr);
    void *p = os_map(4096);
    EXPECT_NE(p, nullptr);
    os_unmap(p, 4096);
    EXPECT_EQ(os_injected_failures(), injected + 2);
}

TEST(Os, RandomFailuresHappenAndStop) {
    os_fail_maps_randomly(2, 42);
    int failed = 0;
    for (int i = 0; i < 200; i++) {
        void *p = os_map(4096);
        if (p == nullptr) failed++;
        else os_unmap(p, 4096);
    }
    os_fail_maps_randomly(0, 0);
    EXPECT_GT(failed, 20);
    EXPECT_LT(failed, 180);
    void *p = os_map(4096);
    EXPECT_NE(p, nullptr);
    os_unmap(p, 4096);
}

}  // namespace
