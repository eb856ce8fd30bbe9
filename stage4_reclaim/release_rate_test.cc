// stage4_reclaim/release_rate_test.cc — the release policy over time does
// what HCMALLOC_RELEASE_DELAY_MS and HCMALLOC_RELEASE_RATE say. Built once
// and run as four tests (BUILD): unset (1000 ms), rate 0 (never), rate 1024
// (at once) and a 50 ms delay; the test reads the variables to know which
// behaviour to expect. Sleeping past the delay is no timed assertion: what
// is checked is what the page cache did once the delay had certainly passed.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <thread>
#include <vector>

extern "C" {
#include "common/hcmalloc.h"
#include "stage3_pagecache/page_cache.h"
#include "stage4_reclaim/options.h"
#include "stage4_reclaim/page_release.h"
}
#include "tests/stats_util.h"

namespace {

using hc_test::ResidentBytes;
using hc_test::Stats;

size_t EnvOr(const char *name, size_t fallback) {
    const char *env = getenv(name);
    return env == nullptr ? fallback : strtoul(env, nullptr, 10);
}

const size_t kRate = EnvOr("HCMALLOC_RELEASE_RATE", HC_DEFAULT_RELEASE_RATE);
const size_t kDelayMs = EnvOr("HCMALLOC_RELEASE_DELAY_MS", HC_DEFAULT_RELEASE_DELAY_MS);
// The delay the page cache works with: the set one divided by the rate.
const size_t kEffectiveDelayMs = kRate == 0 ? 0 : kDelayMs / kRate;

void SleepMs(size_t ms) {
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

// Past the delay for sure: the page cache reads a coarse clock (ticks of a
// few ms).
void SleepPastTheDelay() { SleepMs(2 * kEffectiveDelayMs + 50); }

// One call that reaches the page cache: a large block, allocated and freed.
void OneSlowPathCall() { hc_free(hc_malloc(1 << 20)); }

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

TEST(ReleaseRate, TheVariablesSetThePolicy) {
    ASSERT_EQ(hc_get_options()->release_rate, kRate);
    ASSERT_EQ(hc_get_options()->release_delay_ms, kDelayMs);

    std::vector<size_t> released = Churn(4);
    hc_stats s = Stats();
    const size_t freed_pages_bytes = s.page_cache_free_bytes + s.released_bytes;
    std::printf("rate %zu, delay %zu ms: released after each 64 MiB round: %zu, %zu, %zu, %zu "
                "KiB; free backed %zu KiB; madvise calls %zu\n",
                kRate, kDelayMs, released[0] >> 10, released[1] >> 10, released[2] >> 10,
                released[3] >> 10, s.page_cache_free_bytes >> 10, pc_release_calls());
    if (kRate == 0) {
        EXPECT_EQ(s.released_bytes, 0u) << "0 = never";
        EXPECT_EQ(pc_release_calls(), 0u);
        EXPECT_GE(s.page_cache_free_bytes, (size_t)64 << 20) << "all of it stays backed";
    } else if (kEffectiveDelayMs == 0) {
        // No delay: everything freed goes back at once.
        EXPECT_GE(s.released_bytes, freed_pages_bytes - freed_pages_bytes / 10);
    }
    // With a delay, what went back depends on how long the rounds took: the
    // tests below sleep past it instead.
    const char *broken = pc_check();
    EXPECT_EQ(broken, nullptr) << broken;

    // Whatever the policy, the explicit call releases everything.
    hc_release_free_memory();
    EXPECT_EQ(Stats().page_cache_free_bytes, 0u);
    EXPECT_GE(Stats().released_bytes, (size_t)64 << 20);
}

TEST(ReleaseRate, IdleFreePagesGoBackAtTheNextSlowPath) {
    Churn(1);
    const size_t backed_before = Stats().page_cache_free_bytes;
    const size_t calls_before = pc_release_calls();
    SleepPastTheDelay();
    OneSlowPathCall();
    hc_stats s = Stats();
    std::printf("idle: free backed %zu KiB before, %zu KiB after one slow path; madvise calls %zu\n",
                backed_before >> 10, s.page_cache_free_bytes >> 10,
                pc_release_calls() - calls_before);
    if (kRate == 0) {
        EXPECT_GE(s.page_cache_free_bytes, (size_t)60 << 20) << "never released";
    } else {
        // The 1 MiB block of the call itself may stay backed.
        EXPECT_LE(s.page_cache_free_bytes, (size_t)2 << 20) << "idle pages went back";
        EXPECT_GE(s.released_bytes, (size_t)62 << 20);
    }
    const char *broken = pc_check();
    EXPECT_EQ(broken, nullptr) << broken;
}

// bigblocks in small: 20 live blocks of 1-4 MiB replaced at random, every
// page written. Frees and allocations balance, so the pages stay in use:
// releasing them would only fault them back in.
TEST(ReleaseRate, ASteadyLoopOfBigBlocksMakesFewReleases) {
    if (kRate == 0 || kEffectiveDelayMs == 0 || kEffectiveDelayMs > 100)
        GTEST_SKIP() << "for a short delay (the delay variant): the loop sleeps through windows";
    const int kLive = 20, kReplacements = 3000;
    std::vector<void *> live(kLive, nullptr);
    uint64_t seed = 12345;
    auto next = [&seed] { return (seed = seed * 6364136223846793005u + 1442695040888963407u) >> 33; };
    auto replace = [&](int i) {
        hc_free(live[i]);
        size_t size = (1 + next() % 4) << 20;
        char *p = static_cast<char *>(hc_malloc(size));
        ASSERT_NE(p, nullptr);
        for (size_t off = 0; off < size; off += 4096) p[off] = 1;
        live[i] = p;
    };
    for (int i = 0; i < kLive; i++) replace(i);  // the working set, before counting
    for (int i = 0; i < kReplacements / 10; i++) replace((int)(next() % kLive));
    const size_t calls_before = pc_release_calls();
    for (int i = 0; i < kReplacements; i++) {
        replace((int)(next() % kLive));
        if (i % 300 == 0)
            SleepMs(kEffectiveDelayMs / 2);  // a few windows pass during the loop
    }
    const size_t calls = pc_release_calls() - calls_before;
    std::printf("%d blocks replaced: %zu madvise calls (%.3f per block)\n", kReplacements, calls,
                (double)calls / kReplacements);
    EXPECT_LT(calls * 10, (size_t)kReplacements) << "below 0.1 madvise calls per replaced block";
    for (void *p : live) hc_free(p);
    const char *broken = pc_check();
    EXPECT_EQ(broken, nullptr) << broken;
}

// Small objects all freed in random order by a thread that then exits: their
// spans come back to the page cache as they empty, and once the program has
// been idle past the delay, its next slow path gives them to the OS.
TEST(ReleaseRate, SmallObjectsFreedInRandomOrderGoBackWhenIdle) {
    if (kRate == 0)
        GTEST_SKIP() << "never released";
    hc_release_free_memory();
    const size_t rss_base = ResidentBytes();
    std::thread([] {
        const size_t kCount = 1 << 20;  // ~200 MiB of 16..384-byte objects
        std::vector<void *> objs(kCount);
        uint64_t seed = 99;
        auto next = [&seed] { return (seed = seed * 6364136223846793005u + 1442695040888963407u) >> 33; };
        for (size_t i = 0; i < kCount; i++) {
            size_t size = 16 + 16 * (next() % 24);
            objs[i] = hc_malloc(size);
            memset(objs[i], 1, size);
        }
        for (size_t i = kCount - 1; i > 0; i--) std::swap(objs[i], objs[next() % (i + 1)]);
        for (void *p : objs) hc_free(p);
    }).join();
    const size_t rss_freed = ResidentBytes();
    SleepPastTheDelay();
    OneSlowPathCall();
    const size_t rss_idle = ResidentBytes();
    hc_stats s = Stats();
    std::printf("small objects freed: RSS above the start %zu KiB after the frees, %zu KiB after "
                "idling and one slow path (in use %zu KiB, thread caches %zu KiB, metadata %zu "
                "KiB)\n",
                (rss_freed - rss_base) >> 10, (rss_idle - rss_base) >> 10, s.bytes_in_use >> 10,
                s.thread_cache_bytes >> 10, s.metadata_bytes >> 10);
    const size_t allowed = s.bytes_in_use + s.thread_cache_bytes + s.central_cache_bytes +
                           s.metadata_bytes + ((size_t)2 << 20);
    EXPECT_LE(rss_idle > rss_base ? rss_idle - rss_base : 0, allowed + allowed / 10);
}

}  // namespace
