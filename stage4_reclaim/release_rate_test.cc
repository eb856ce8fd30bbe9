// stage4_reclaim/release_rate_test.cc — HCMALLOC_RELEASE_RATE does what it
// says. Built once and run as three tests (BUILD): unset (default 1), 0 and
// 1024; the test reads the variable to know which behaviour to expect.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <vector>

extern "C" {
#include "common/hcmalloc.h"
#include "stage3_pagecache/page_cache.h"
#include "stage4_reclaim/options.h"
#include "stage4_reclaim/page_release.h"
}
#include "tests/stats_util.h"

namespace {

using hc_test::Stats;

// Allocates and frees `rounds` x 64 MiB of 256 KiB blocks (large spans, so
// every free goes straight to the page cache), returning the released bytes
// seen after each round.
std::vector<size_t> Churn(int rounds) {
    const size_t kBlock = 256 << 10, kCount = 256;
    std::vector<size_t> released;
    std::vector<void *> blocks(kCount);
    for (int r = 0; r < rounds; r++) {
        for (auto &b : blocks) {
            b = hc_malloc(kBlock);
            memset(b, 1, kBlock);
        }
        for (void *b : blocks) hc_free(b);
        released.push_back(Stats().released_bytes);
    }
    return released;
}

TEST(ReleaseRate, TheVariableSetsThePolicy) {
    const char *env = getenv("HCMALLOC_RELEASE_RATE");
    const size_t rate = env == nullptr ? HC_DEFAULT_RELEASE_RATE : strtoul(env, nullptr, 10);
    ASSERT_EQ(hc_get_options()->release_rate, rate);

    std::vector<size_t> released = Churn(4);
    hc_stats s = Stats();
    const size_t freed_pages_bytes = s.page_cache_free_bytes + s.released_bytes;
    std::printf("HCMALLOC_RELEASE_RATE=%zu: released after each 64 MiB round: %zu, %zu, %zu, %zu "
                "KiB; free backed %zu KiB; madvise calls %zu\n",
                rate, released[0] >> 10, released[1] >> 10, released[2] >> 10, released[3] >> 10,
                s.page_cache_free_bytes >> 10, pc_release_calls());
    if (rate == 0) {
        EXPECT_EQ(s.released_bytes, 0u) << "0 = never";
        EXPECT_EQ(pc_release_calls(), 0u);
        EXPECT_GE(s.page_cache_free_bytes, (size_t)64 << 20) << "all of it stays backed";
    } else if (rate >= 1024) {
        // One release per page freed: everything freed goes back at once.
        EXPECT_GE(s.released_bytes, freed_pages_bytes - freed_pages_bytes / 10);
    } else {
        // Over time: something after the first rounds, but not everything.
        EXPECT_GT(released.back(), 0u) << "released as frees accumulate credit";
        EXPECT_GT(s.page_cache_free_bytes, 0u);
    }
    const char *broken = pc_check();
    EXPECT_EQ(broken, nullptr) << broken;

    // Whatever the rate, the explicit call releases everything.
    hc_release_free_memory();
    EXPECT_EQ(Stats().page_cache_free_bytes, 0u);
    EXPECT_GE(Stats().released_bytes, (size_t)64 << 20);
}

}  // namespace
