// stage4_reclaim/property_test.cc — hc_get_property against hc_get_stats,
// for the stage it is linked with (stage 4 and stage 1: the BUILD builds
// both): a stage answers the figures its layers have, and only those.
#include <gtest/gtest.h>
#include <string.h>

#include "common/hcmalloc.h"

namespace {

TEST(Property, FiguresMatchTheStats) {
    void *keep = hc_malloc(1 << 20);
    hc_stats s;
    hc_get_stats(&s);
    size_t v = 0;
    ASSERT_EQ(hc_get_property("generic.current_allocated_bytes", &v), 1);
    EXPECT_EQ(v, s.bytes_in_use);
    ASSERT_EQ(hc_get_property("generic.heap_size", &v), 1);
    EXPECT_EQ(v, s.os_mapped_bytes);
    ASSERT_EQ(hc_get_property("hcmalloc.current_total_thread_cache_bytes", &v), 1);
    EXPECT_EQ(v, s.thread_cache_bytes);
    ASSERT_EQ(hc_get_property("hcmalloc.metadata_bytes", &v), 1);
    EXPECT_EQ(v, s.metadata_bytes);
    hc_free_sized(keep, 1 << 20);
}

TEST(Property, EachStageAnswersWhatItHas) {
    bool stage4 = strcmp(hc_stage_name(), "stage4_reclaim") == 0;
    size_t v = 12345;
    EXPECT_EQ(hc_get_property("hcmalloc.max_total_thread_cache_bytes", &v), stage4 ? 1 : 0);
    if (stage4)
        EXPECT_EQ(v, size_t{32} << 20); // the default budget
    else
        EXPECT_EQ(v, 12345u); // untouched
    EXPECT_EQ(hc_get_property("hcmalloc.pageheap_unmapped_bytes", &v), stage4 ? 1 : 0);
    EXPECT_EQ(hc_get_property("hcmalloc.central_cache_free_bytes", &v),
              (hc_features() & HC_FEATURE_CENTRAL_CACHE) ? 1 : 0);
}

TEST(Property, UnknownNamesAreRefused) {
    size_t v = 7;
    EXPECT_EQ(hc_get_property("no.such.property", &v), 0);
    EXPECT_EQ(hc_get_property("generic.current_allocated_bytes_", &v), 0);
    EXPECT_EQ(hc_get_property(nullptr, &v), 0);
    EXPECT_EQ(v, 7u);
}

}  // namespace
