// tests/accounting_test.cc — memory accounting, checked in every stage's
// conformance_test (tests/defs.bzl links it in).
//
// 1. A check after the whole program (a gtest Environment's TearDown, so it
//    runs once every test of the binary has): every byte the allocator has
//    mapped is accounted for by hc_get_stats,
//        os_mapped = in use + thread caches + central + page cache (free and
//                    released) + metadata + unaccounted,
//    with unaccounted >= 0 and at most kSlackBytes (span tails too small for
//    an object, stage 1's unused chunk ends).
// 2. Objects cost what they are: N small objects raise bytes_in_use by about
//    N x their class size, and os_mapped_bytes less metadata by not much
//    more (metadata is bounded on its own: it follows the address space the
//    heap spans, not the objects). A layer that
//    loses objects (a bucket that keeps one batch of a new span and drops
//    the rest) maps several times more, and counts the lost objects as "in
//    use": both bounds catch it.
#include <gtest/gtest.h>

#include <cstdio>
#include <thread>
#include <vector>

extern "C" {
#include "common/hcmalloc.h"
#include "common/size_class.h"
}

#include "tests/stats_util.h"

namespace {

// The stated slack: span tails, page-map leaves counted as mapped before
// metadata, stage 1's partly carved chunks. Measured: under 1 MiB on every
// stage after the conformance suite.
constexpr size_t kSlackBytes = (size_t)4 << 20;

size_t Accounted(const hc_stats &s) {
    return s.bytes_in_use + s.thread_cache_bytes + s.central_cache_bytes + s.page_cache_free_bytes +
           s.released_bytes + s.metadata_bytes;
}

std::string Describe(const hc_stats &s) {
    char line[400];
    std::snprintf(line, sizeof line,
                  "mapped %zu = in use %zu + thread caches %zu + central %zu + page cache %zu + "
                  "released %zu + metadata %zu + unaccounted %lld",
                  s.os_mapped_bytes, s.bytes_in_use, s.thread_cache_bytes, s.central_cache_bytes,
                  s.page_cache_free_bytes, s.released_bytes, s.metadata_bytes,
                  (long long)s.os_mapped_bytes - (long long)Accounted(s));
    return line;
}

class AccountingAtExit : public ::testing::Environment {
  public:
    void TearDown() override {
        hc_stats s = hc_test::Stats();
        EXPECT_LE(Accounted(s), s.os_mapped_bytes) << "more accounted than mapped: " << Describe(s);
        EXPECT_LE(s.os_mapped_bytes, Accounted(s) + kSlackBytes)
            << "mapped memory no layer accounts for (lost objects or spans?): " << Describe(s);
        if (getenv("HC_ACCOUNTING_VERBOSE") != nullptr) std::printf("accounting: %s\n", Describe(s).c_str());
    }
};

const ::testing::Environment *const accounting_env =
    ::testing::AddGlobalTestEnvironment(new AccountingAtExit);

TEST(Accounting, SmallObjectsCostAboutTheirClassSize) {
    for (size_t size : {64, 200, 1024}) {
        std::thread([size] {
            const size_t n = ((size_t)4 << 20) / size;  // 4 MiB of objects
            const size_t bytes = n * sc_size(sc_index(size));
            // The rounds before left their classes' caches (and the tails of
            // their spans, counted in use); an idle sweep may give those
            // back during this round. They go first, out of the figures.
            hc_release_free_memory();
            hc_stats before = hc_test::Stats();
            std::vector<void *> ptrs;
            for (size_t i = 0; i < n; i++) {
                ptrs.push_back(hc_malloc(size));
                ASSERT_NE(ptrs.back(), nullptr);
            }
            hc_stats after = hc_test::Stats();
            // What the thread caches hold counts as neither in use nor lost.
            long long in_use = (long long)after.bytes_in_use - (long long)before.bytes_in_use;
            // Metadata (stage 3's page-map leaves, 1.25 MiB of mapping for each
            // 256 MiB of address space a region lands in) grows with where the
            // heap lies, not with the objects: it is bounded on its own. Under
            // ASan the OS scatters regions more widely (its own mappings take
            // the room below the heap), and one run in about 100 mapped three
            // leaves here.
            long long metadata = (long long)after.metadata_bytes - (long long)before.metadata_bytes;
            long long mapped =
                (long long)after.os_mapped_bytes - (long long)before.os_mapped_bytes - metadata;
            EXPECT_GE(in_use, (long long)bytes) << size << " B: " << Describe(after);
            EXPECT_LE(in_use, (long long)(bytes + bytes / 8 + ((size_t)1 << 20)))
                << size << " B: in use grew by more than the objects: objects lost? " << Describe(after);
            EXPECT_LE(mapped, (long long)(bytes + bytes / 4 + ((size_t)2 << 20)))
                << size << " B: mapped " << mapped << " besides metadata for " << bytes
                << " B of objects: " << Describe(after);
            EXPECT_LE(metadata, (long long)(bytes + ((size_t)1 << 20)))
                << size << " B: metadata grew by " << metadata << " for " << bytes
                << " B of objects: " << Describe(after);
            for (void *p : ptrs) hc_free_sized(p, size);
            hc_thread_flush();
        }).join();
    }
}

}  // namespace
