// stage4_reclaim/release_test.cc — free pages go back to the OS: RSS drops
// after hc_release_free_memory, a released span reused is correct, and every
// stat is filled. Its own process: the RSS figures must not see other tests.
#include <gtest/gtest.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <string>

extern "C" {
#include "common/hcmalloc.h"
#include "stage3_pagecache/page_cache.h"
#include "stage4_reclaim/page_release.h"
#include "stage4_reclaim/stats.h"
}
#include "tests/page_cache_check.h"
#include "tests/stats_util.h"

namespace {

using hc_test::MinorFaults;
using hc_test::ResidentBytes;
using hc_test::Stats;

// Runs first (gtest keeps file order): a large heap, mostly freed.
TEST(Release, ReleaseFreeMemoryBringsRssDownToWhatIsInUse) {
    const size_t kLarge = 256 << 10, kLargeCount = 1024;  // 256 MiB in large spans
    const size_t kSmall = 1000, kSmallCount = 64 << 10;   // 64 MiB of small objects
    const size_t kKeepLarge = 32, kKeepSmall = 4096;      // 8 MiB + 4 MiB stay in use
    void **large = static_cast<void **>(hc_malloc(kLargeCount * sizeof(void *)));
    void **small = static_cast<void **>(hc_malloc(kSmallCount * sizeof(void *)));
    ASSERT_TRUE(large != nullptr && small != nullptr);
    const size_t rss_base = ResidentBytes();

    for (size_t i = 0; i < kLargeCount; i++) {
        large[i] = hc_malloc(kLarge);
        ASSERT_NE(large[i], nullptr);
        memset(large[i], 0x5a, kLarge);
    }
    for (size_t i = 0; i < kSmallCount; i++) {
        small[i] = hc_malloc(kSmall);
        ASSERT_NE(small[i], nullptr);
        memset(small[i], 0xa5, kSmall);
    }
    const size_t rss_peak = ResidentBytes();
    for (size_t i = kKeepLarge; i < kLargeCount; i++) hc_free(large[i]);
    for (size_t i = kKeepSmall; i < kSmallCount; i++) hc_free(small[i]);
    hc_thread_flush();
    const size_t rss_freed = ResidentBytes();
    hc_stats before = Stats();
    hc_release_free_memory();
    const size_t rss_released = ResidentBytes();
    hc_stats after = Stats();

    const size_t kept = kKeepLarge * kLarge + kKeepSmall * kSmall;
    const size_t allowed = kept + after.metadata_bytes;
    std::printf("RSS above the start: peak %zu KiB, after free %zu KiB, after "
                "hc_release_free_memory %zu KiB; in use %zu KiB + metadata %zu KiB "
                "(limit %zu KiB); released %zu KiB\n",
                (rss_peak - rss_base) >> 10, (rss_freed - rss_base) >> 10,
                (rss_released - rss_base) >> 10, kept >> 10, after.metadata_bytes >> 10,
                (allowed + allowed / 10) >> 10, after.released_bytes >> 10);
    EXPECT_GT(rss_peak - rss_base, (size_t)300 << 20) << "the heap was really touched";
    EXPECT_LE(rss_released - rss_base, allowed + allowed / 10)
        << "within 10% of what is in use plus metadata";
    EXPECT_EQ(after.page_cache_free_bytes, 0u) << "nothing free is left backed";
    EXPECT_GE(after.released_bytes, before.released_bytes + before.page_cache_free_bytes);
    EXPECT_GE(after.released_bytes, (size_t)250 << 20);
    EXPECT_PAGE_CACHE_CONSISTENT();

    for (size_t i = 0; i < kKeepLarge; i++) hc_free(large[i]);
    for (size_t i = 0; i < kKeepSmall; i++) hc_free(small[i]);
    hc_free(large);
    hc_free(small);
}

TEST(Release, AReleasedSpanReusedHoldsWhatIsWrittenAndCallocZeroesIt) {
    const size_t kSize = 1 << 20;
    char *p = static_cast<char *>(hc_malloc(kSize));
    ASSERT_NE(p, nullptr);
    memset(p, 0xab, kSize);
    hc_free(p);
    hc_release_free_memory();
    EXPECT_GE(Stats().released_bytes, kSize);
    EXPECT_PAGE_CACHE_CONSISTENT();

    // Reuse: the same pages (the best fit) fault back in and work as memory.
    long faults_before = MinorFaults();
    char *q = static_cast<char *>(hc_malloc(kSize));
    ASSERT_NE(q, nullptr);
    for (size_t i = 0; i < kSize; i++) q[i] = static_cast<char>(i * 31);
    long faults = MinorFaults() - faults_before;
    for (size_t i = 0; i < kSize; i += 4093) ASSERT_EQ(q[i], static_cast<char>(i * 31));
    std::printf("touching a reused released 1 MiB block: %ld minor page faults\n", faults);
    EXPECT_GE(faults, 1) << "released pages come back through page faults";
    hc_free(q);

    // A dirty span that was never released: calloc must clear it.
    char *d = static_cast<char *>(hc_malloc(kSize));
    memset(d, 0xcd, kSize);
    hc_free(d);
    char *z = static_cast<char *>(hc_calloc(1, kSize));
    ASSERT_NE(z, nullptr);
    for (size_t i = 0; i < kSize; i++) ASSERT_EQ(z[i], 0) << "byte " << i;
    memset(z, 0xef, kSize);
    hc_free(z);
    // And one that was released after being dirtied.
    hc_release_free_memory();
    z = static_cast<char *>(hc_calloc(kSize, 1));
    ASSERT_NE(z, nullptr);
    for (size_t i = 0; i < kSize; i++) ASSERT_EQ(z[i], 0) << "byte " << i;
    hc_free(z);

    // Small objects on pages that were released: carved again, usable.
    hc_release_free_memory();
    void *objs[512];
    for (auto &o : objs) {
        o = hc_calloc(1, 2048);
        ASSERT_NE(o, nullptr);
        for (int i = 0; i < 2048; i++) ASSERT_EQ(static_cast<char *>(o)[i], 0);
        memset(o, 0x77, 2048);
    }
    for (void *o : objs) hc_free(o);
    EXPECT_PAGE_CACHE_CONSISTENT();
}

double Seconds() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// The cost of releasing: writing released pages again takes a page fault
// per OS page; writing resident ones takes none. The faults are asserted,
// the times only printed (a machine's speed is no test's business).
TEST(Release, ReusingReleasedPagesCostsPageFaults) {
    const size_t kSize = 16 << 20;
    const size_t os_pages = kSize / (size_t)sysconf(_SC_PAGESIZE);
    char *p = static_cast<char *>(hc_malloc(kSize));
    memset(p, 1, kSize);
    long f0 = MinorFaults();
    double t0 = Seconds();
    memset(p, 2, kSize);  // resident: the baseline
    double backed_s = Seconds() - t0;
    long backed_faults = MinorFaults() - f0;
    hc_free(p);
    hc_release_free_memory();
    f0 = MinorFaults();
    t0 = Seconds();
    p = static_cast<char *>(hc_malloc(kSize));  // every free page is released now
    memset(p, 3, kSize);
    double released_s = Seconds() - t0;
    long released_faults = MinorFaults() - f0;
    hc_free(p);
    std::printf("writing 16 MiB: resident %ld faults %.2f ms; reused after release %ld faults "
                "%.2f ms (%.0f ns more per fault)\n",
                backed_faults, backed_s * 1e3, released_faults, released_s * 1e3,
                (released_s - backed_s) * 1e9 / (released_faults > 0 ? released_faults : 1));
    EXPECT_LT(backed_faults, (long)os_pages / 16);
    // A 16 MiB heap grows in huge pages (HCMALLOC_HUGE_HEAP_MB): a fault
    // may bring back 2 MiB, so the bound is one fault per huge page.
    EXPECT_GE(released_faults, (long)(kSize / PC_HUGE_PAGE_BYTES)) << "released pages come back only by faulting";
}

TEST(Release, EveryStatIsFilledAndAddsUp) {
    void *large = hc_malloc(3 << 20);
    void *smalls[100];
    for (auto &s : smalls) s = hc_malloc(100);
    hc_free(hc_malloc(2 << 20));  // a free span, backed (the default rate is slow)
    for (int i = 0; i < 50; i++) hc_free(smalls[i]);  // into this thread's cache
    hc_stats s = Stats();
    EXPECT_GE(s.bytes_in_use, (size_t)(3 << 20) + 50 * 100);
    EXPECT_GT(s.thread_cache_bytes, 0u);
    EXPECT_GT(s.central_cache_bytes, 0u) << "the rest of the 100-byte span";
    EXPECT_GT(s.metadata_bytes, 0u);
    EXPECT_GT(s.os_mapped_bytes, s.metadata_bytes);
    EXPECT_GE(s.os_mapped_bytes, s.bytes_in_use + s.thread_cache_bytes + s.central_cache_bytes +
                                     s.page_cache_free_bytes + s.released_bytes + s.metadata_bytes)
        << "every byte is in exactly one place, all of it mapped";
    hc_release_free_memory();
    hc_stats r = Stats();
    EXPECT_EQ(r.page_cache_free_bytes, 0u);
    EXPECT_EQ(r.thread_cache_bytes, 0u) << "hc_release_free_memory flushed this thread";
    EXPECT_GT(r.released_bytes, 0u);
    EXPECT_EQ(r.os_mapped_bytes, s.os_mapped_bytes) << "released, not unmapped: address kept";
    for (int i = 50; i < 100; i++) hc_free(smalls[i]);
    hc_free(large);
}

TEST(Release, PrintStatsWritesEveryFigure) {
    void *p = hc_malloc(12345);
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    hc_print_stats(fds[1]);
    close(fds[1]);
    char buf[4096];
    ssize_t n = read(fds[0], buf, sizeof buf - 1);
    close(fds[0]);
    ASSERT_GT(n, 0);
    buf[n] = '\0';
    std::string report(buf);
    std::fputs(buf, stdout);
    for (const char *label : {"bytes in use by the program", "free in thread caches",
                              "free in central buckets", "free in the page cache",
                              "released to the OS", "mapped from the OS", "of which metadata",
                              "thread-cache budget", "live thread caches", "stage4_reclaim"})
        EXPECT_NE(report.find(label), std::string::npos) << label;
    hc_stats s = Stats();
    EXPECT_NE(report.find(std::to_string(s.os_mapped_bytes)), std::string::npos)
        << "the mapped figure, in bytes";
    char tiny[16];
    EXPECT_EQ(hc_format_stats(tiny, sizeof tiny), sizeof tiny - 1) << "cut short, terminated";
    EXPECT_EQ(tiny[sizeof tiny - 1], '\0');
    hc_free(p);
}

}  // namespace
