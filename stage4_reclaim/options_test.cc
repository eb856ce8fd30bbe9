// stage4_reclaim/options_test.cc — environment variables are parsed without
// malloc, and a malformed one warns once and is ignored.
#include <gtest/gtest.h>
#include <stdlib.h>

extern "C" {
#include "stage4_reclaim/options.h"
#include "stage4_reclaim/reclaim.h"
}

namespace {

TEST(Options, ParseSize) {
    size_t v = 0;
    EXPECT_EQ(hc_parse_size("0", &v), 0);
    EXPECT_EQ(v, 0u);
    EXPECT_EQ(hc_parse_size("12345", &v), 0);
    EXPECT_EQ(v, 12345u);
    EXPECT_EQ(hc_parse_size("64k", &v), 0);
    EXPECT_EQ(v, 64u << 10);
    EXPECT_EQ(hc_parse_size("32M", &v), 0);
    EXPECT_EQ(v, (size_t)32 << 20);
    EXPECT_EQ(hc_parse_size("2g", &v), 0);
    EXPECT_EQ(v, (size_t)2 << 30);
    for (const char *bad : {"", "-1", "12x", "1.5", " 3", "3 ", "k", "99999999999999999999999",
                            "18014398509481984g"}) {
        EXPECT_EQ(hc_parse_size(bad, &v), -1) << '"' << bad << '"';
    }
}

TEST(Options, EachVariableChangesWhatItSays) {
    // Death-test children re-run this binary, so each reads its own environment.
    testing::FLAGS_gtest_death_test_style = "threadsafe";
    setenv("HCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES", "3m", 1);
    setenv("HCMALLOC_RELEASE_RATE", "7", 1);
    setenv("HCMALLOC_RELEASE_DELAY_MS", "250", 1);
    EXPECT_EXIT(
        {
            const hc_options *o = hc_get_options();
            tc_budget_stats b;
            tc_budget_snapshot(&b);
            _exit(o->max_total_thread_cache_bytes == (3u << 20) && b.budget_bytes == (3u << 20) &&
                          o->release_rate == 7 && o->release_delay_ms == 250
                      ? 0
                      : 1);
        },
        testing::ExitedWithCode(0), "");
    unsetenv("HCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES");
    unsetenv("HCMALLOC_RELEASE_RATE");
    unsetenv("HCMALLOC_RELEASE_DELAY_MS");
}

TEST(Options, AMalformedValueWarnsOnceAndIsIgnored) {
    testing::FLAGS_gtest_death_test_style = "threadsafe";
    setenv("HCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES", "lots", 1);
    EXPECT_EXIT(
        {
            const hc_options *o = hc_get_options();
            hc_get_options();  // read once: no second warning
            _exit(o->max_total_thread_cache_bytes == HC_DEFAULT_MAX_TOTAL_THREAD_CACHE_BYTES ? 0 : 1);
        },
        testing::ExitedWithCode(0),
        "^hcmalloc: HCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES: ignoring malformed value, using the "
        "default\n$");
    unsetenv("HCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES");
}

}  // namespace
