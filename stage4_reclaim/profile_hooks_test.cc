// stage4_reclaim/profile_hooks_test.cc — layer 4: the profiler's block hooks
// (profile_hooks.h) as stage 3's malloc.c calls them, in :hcmalloc_profiler
// with every allocation sampled. A sampled block has a large span of its own
// whatever its size, so each way it is freed must reach large_free and the
// profiler: hc_free by the page map, hc_free_sized though the size names a
// small class (the check BLOCK_HOOKS_WATCH turns on), and realloc, which
// resizes it in place.
#include <gtest/gtest.h>

#include <cstdlib>

#include "common/hcmalloc.h"
extern "C" {
#include "stage4_reclaim/profile.h"
}

namespace {

size_t live_samples() {
    hc_profile_stats s;
    hc_profile_get_stats(&s);
    return s.live_samples;
}

constexpr int kBlocks = 100;

TEST(ProfileHooks, EveryAllocationIsSampled) {
    size_t before = live_samples();
    void *p = hc_malloc(48);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(live_samples(), before + 1);
    hc_free(p);
    EXPECT_EQ(live_samples(), before);
}

TEST(ProfileHooks, SizedFreeOfASampledSmallBlockReachesTheProfiler) {
    size_t before = live_samples();
    void *blocks[kBlocks];
    for (void *&p : blocks)
        ASSERT_NE(p = hc_malloc(48), nullptr);
    EXPECT_EQ(live_samples(), before + kBlocks);
    for (void *p : blocks)
        hc_free_sized(p, 48);
    EXPECT_EQ(live_samples(), before) << "a sized free pushed a sampled block onto a small list";
}

TEST(ProfileHooks, ReallocWithinTheSpanKeepsTheSample) {
    size_t before = live_samples();
    char *p = static_cast<char *>(hc_malloc(48));
    ASSERT_NE(p, nullptr);
    size_t usable = hc_usable_size(p);
    EXPECT_GE(usable, 48u);
    EXPECT_EQ(hc_realloc(p, usable), p) << "a sampled block is resized in place";
    EXPECT_EQ(live_samples(), before + 1);
    hc_free(p);
    EXPECT_EQ(live_samples(), before);
}

}  // namespace
