// stage3_pagecache/direct_growth_test.cc — realloc of a block mapped
// directly (PC_DIRECT_MAP_BYTES and up) that must grow: the kernel grows
// or moves its mapping (mremap), its pages carried over in the page
// tables, where a copy would read and write every byte and hold the old
// and the new block at once (pc_grow_direct_span). The test wraps mremap
// at link time (-Wl,--wrap=mremap in BUILD): the call in common/os.c, another
// object file, reaches __wrap_mremap below, which counts it, or refuses it
// when told to.
#include <errno.h>
#include <gtest/gtest.h>
#include <stdarg.h>
#include <sys/mman.h>

#include <cstdio>

extern "C" {
#include "common/hcmalloc.h"
#include "common/os.h"
#include "stage3_pagecache/page_cache.h"

void *__real_mremap(void *old, size_t old_size, size_t new_size, int flags, ...);

static int remaps, refused;
static bool refuse_remaps;

void *__wrap_mremap(void *old, size_t old_size, size_t new_size, int flags, ...) {
    void *dest = nullptr;
    if (flags & MREMAP_FIXED) {
        va_list args;
        va_start(args, flags);
        dest = va_arg(args, void *);
        va_end(args);
    }
    if (refuse_remaps) {
        refused++;
        errno = ENOMEM;
        return MAP_FAILED;
    }
    remaps++;
    return __real_mremap(old, old_size, new_size, flags, dest);
}
}

namespace {

// One byte written on every OS page of [p + from, p + to), from its offset:
// a copy that dropped or shifted a page shows.
void Mark(unsigned char *p, size_t from, size_t to) {
    for (size_t i = from; i < to; i += 4096) p[i] = static_cast<unsigned char>(i >> 12);
}
bool Marked(const unsigned char *p, size_t to) {
    for (size_t i = 0; i < to; i += 4096)
        if (p[i] != static_cast<unsigned char>(i >> 12)) return false;
    return true;
}

size_t DirectBytes() {
    pc_census c;
    pc_get_census(&c);
    return c.direct_pages << HC_PAGE_SHIFT;
}

TEST(DirectGrowth, AMappingGrowsByTheKernelNotByACopy) {
    const size_t size = PC_DIRECT_MAP_BYTES, grown_size = 2 * PC_DIRECT_MAP_BYTES;
    const size_t direct_before = DirectBytes(), mapped_before = os_mapped_bytes();
    auto *p = static_cast<unsigned char *>(hc_malloc(size));
    ASSERT_NE(p, nullptr);
    Mark(p, 0, size);
    remaps = 0;
    auto *q = static_cast<unsigned char *>(hc_realloc(p, grown_size));
    ASSERT_NE(q, nullptr);
    std::printf("grown from %zu to %zu MiB with %d mremap calls, %s\n", size >> 20, grown_size >> 20,
                remaps, q == p ? "in place" : "moved");
    EXPECT_GE(remaps, 1) << "the kernel grows or moves the mapping";
    EXPECT_TRUE(Marked(q, size)) << "every page kept its contents";
    EXPECT_GE(hc_usable_size(q), grown_size);
    Mark(q, size, grown_size);  // the new part is the program's
    EXPECT_GE(DirectBytes(), direct_before + grown_size);
    EXPECT_EQ(pc_check(), nullptr);
    hc_free(q);  // found through the page map at its new place
    EXPECT_EQ(DirectBytes(), direct_before) << "all of the mapping went back";
    // The page map's nodes for the new place stay (a few pages); a mapping
    // of either place left behind would be 64 MiB or more.
    EXPECT_LT(os_mapped_bytes(), mapped_before + (4u << 20));
}

TEST(DirectGrowth, AMoveTheKernelRefusesFallsBackToACopy) {
    const size_t size = PC_DIRECT_MAP_BYTES, grown_size = PC_DIRECT_MAP_BYTES + (PC_DIRECT_MAP_BYTES >> 1);
    const size_t direct_before = DirectBytes(), mapped_before = os_mapped_bytes();
    auto *p = static_cast<unsigned char *>(hc_malloc(size));
    ASSERT_NE(p, nullptr);
    Mark(p, 0, size);
    refused = 0;
    refuse_remaps = true;
    auto *q = static_cast<unsigned char *>(hc_realloc(p, grown_size));
    refuse_remaps = false;
    ASSERT_NE(q, nullptr) << "a copy, as before the kernel was asked";
    EXPECT_GE(refused, 1);
    EXPECT_NE(q, p);
    EXPECT_TRUE(Marked(q, size));
    Mark(q, size, grown_size);
    hc_free(q);
    EXPECT_EQ(DirectBytes(), direct_before);
    EXPECT_LT(os_mapped_bytes(), mapped_before + (4u << 20)) << "the place made for the move is unmapped";
}

}  // namespace
