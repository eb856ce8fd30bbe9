// tests/bad_input_test.cc — what every stage does with input a caller got wrong.
//
// The contract (docs/design.md): an impossible request is NULL with errno set and
// nothing else disturbed; an invalid free stops the program with one line on
// stderr. conformance_test covers the first examples of each; this file
// sweeps the edges. The double-free and wrong-size checks exist only in a
// debug build: the stage's bad_input_debug_test target builds this same file
// with HC_DEBUG=1 (tests/flavours.bzl, flavour "debug").
#include <errno.h>
#include <gtest/gtest.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "tests/test_util.h"

extern "C" {
#include "common/compiler.h"
#include "common/hcmalloc.h"
#include "common/size_class.h"
}

namespace {

using hc_test::HasFeature;
using hc_test::MissingFeature;

const char kInvalidPointer[] = "hcmalloc: free\\(\\): invalid pointer 0x";

// Blocks of several sizes, patterned, that a failed call must leave alone.
class Bystanders {
   public:
    Bystanders() {
        for (size_t size : {(size_t)8, (size_t)100, (size_t)4096, HC_MAX_SMALL_SIZE + 1}) {
            void *p = hc_malloc(size);
            EXPECT_NE(p, nullptr);
            if (p == nullptr) continue;
            hc_test::FillPattern(p, size);
            blocks_.push_back({p, size});
        }
    }
    ~Bystanders() {
        for (auto &b : blocks_) {
            EXPECT_EQ(hc_test::FindPatternMismatch(b.first, b.second), SIZE_MAX)
                << "a failed call disturbed a live block of " << b.second << " bytes";
            hc_free_sized(b.first, b.second);
        }
    }

   private:
    std::vector<std::pair<void *, size_t>> blocks_;
};

void ExpectFailure(void *p, int want_errno, const char *call) {
    EXPECT_EQ(p, nullptr) << call;
    EXPECT_EQ(errno, want_errno) << call;
}

// ---- Impossible requests: NULL and errno, on every stage -----------------------

TEST(BadInput, MallocOfEverySizeNearSizeMaxIsENOMEM) {
    Bystanders live;
    // Every size whose page rounding or header arithmetic could wrap.
    for (size_t below = 0; below <= 2 * HC_PAGE_SIZE; below += below < 64 ? 1 : 61) {
        errno = 0;
        ExpectFailure(hc_malloc(SIZE_MAX - below), ENOMEM, "hc_malloc(SIZE_MAX - k)");
    }
    for (int bit = 48; bit < 64; bit++) {
        errno = 0;
        ExpectFailure(hc_malloc((size_t)1 << bit), ENOMEM, "hc_malloc(2^bit), beyond the address space");
    }
}

TEST(BadInput, CallocOverflowAtTheEdgeIsENOMEM) {
    Bystanders live;
    struct {
        size_t count, size;
    } overflowing[] = {
        {2, SIZE_MAX / 2 + 1},  // exactly SIZE_MAX + 1
        {SIZE_MAX / 2 + 1, 2},
        {SIZE_MAX, 2},
        {(size_t)1 << 32, (size_t)1 << 32},  // exactly 2^64
        {SIZE_MAX, SIZE_MAX},
        {3, SIZE_MAX / 3 + 1},
    };
    for (auto &c : overflowing) {
        errno = 0;
        ExpectFailure(hc_calloc(c.count, c.size), ENOMEM, "calloc whose product wraps");
    }
    // No overflow, but no memory either.
    errno = 0;
    ExpectFailure(hc_calloc(1, SIZE_MAX), ENOMEM, "calloc(1, SIZE_MAX)");
    errno = 0;
    ExpectFailure(hc_calloc(SIZE_MAX / 16, 15), ENOMEM, "calloc of ~SIZE_MAX bytes");
}

TEST(BadInput, CallocWithAZeroFactorIsAFreeableBlock) {
    for (auto [count, size] : {std::pair<size_t, size_t>{0, SIZE_MAX}, {SIZE_MAX, 0}, {0, 0}}) {
        void *p = hc_calloc(count, size);
        ASSERT_NE(p, nullptr) << count << " x " << size << " is 0 bytes, not an overflow";
        hc_free_sized(p, 0);
    }
}

TEST(BadInput, AlignedAllocRejectsEveryNonPowerOfTwo) {
    Bystanders live;
    for (size_t alignment = 0; alignment <= 4096; alignment++) {
        if (alignment != 0 && (alignment & (alignment - 1)) == 0) continue;
        errno = 0;
        ExpectFailure(hc_aligned_alloc(alignment, 64), EINVAL, "non-power-of-two alignment");
    }
    for (size_t alignment : {SIZE_MAX, SIZE_MAX - 1, ((size_t)1 << 63) + 1, ((size_t)3 << 20)}) {
        errno = 0;
        ExpectFailure(hc_aligned_alloc(alignment, 64), EINVAL, "non-power-of-two alignment");
    }
}

TEST(BadInput, AlignedAllocThatCannotFitIsENOMEM) {
    Bystanders live;
    errno = 0;
    ExpectFailure(hc_aligned_alloc(64, SIZE_MAX), ENOMEM, "aligned_alloc(64, SIZE_MAX)");
    errno = 0;
    ExpectFailure(hc_aligned_alloc(4096, SIZE_MAX - 4095), ENOMEM, "aligned_alloc(4096, ~SIZE_MAX)");
    errno = 0;
    ExpectFailure(hc_aligned_alloc((size_t)1 << 63, 16), ENOMEM, "alignment 2^63");
}

TEST(BadInput, ReallocToSizeMaxKeepsTheOldBlock) {
    // On every stage: stages 1-2 cannot realloc at all (ENOMEM, block kept);
    // from stage 3 the size is what fails.
    for (size_t size : {(size_t)1, (size_t)24, (size_t)5000, HC_MAX_SMALL_SIZE, HC_MAX_SMALL_SIZE + 1,
                        (size_t)3 << 20}) {
        void *p = hc_malloc(size);
        ASSERT_NE(p, nullptr);
        hc_test::FillPattern(p, size);
        for (size_t want : {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - HC_PAGE_SIZE, (size_t)1 << 62}) {
            errno = 0;
            EXPECT_EQ(hc_realloc(p, want), nullptr) << size << " -> " << want;
            EXPECT_EQ(errno, ENOMEM) << size << " -> " << want;
            ASSERT_EQ(hc_test::FindPatternMismatch(p, size), SIZE_MAX)
                << "the old block of " << size << " bytes changed after a failed realloc";
        }
        if (HasFeature(HC_FEATURE_UNSIZED_FREE)) {
            // The block is still the caller's, whole: it can grow for real.
            std::vector<unsigned char> before(static_cast<unsigned char *>(p),
                                              static_cast<unsigned char *>(p) + size);
            void *q = hc_realloc(p, size + 1);
            ASSERT_NE(q, nullptr);
            EXPECT_EQ(memcmp(q, before.data(), size), 0) << "realloc after a failed one lost contents";
            hc_free(q);
        } else {
            hc_free_sized(p, size);
        }
    }
}

// ---- Invalid frees: one line on stderr, abort (stage 3+) ------------------------

char static_block[256];

TEST(BadInput, FreeOfMemoryTheAllocatorNeverGaveOutAborts) {
    if (!HasFeature(HC_FEATURE_UNSIZED_FREE)) GTEST_SKIP() << MissingFeature("hc_free (the page map)");
    void *from_glibc = malloc(64);
    ASSERT_NE(from_glibc, nullptr);
    EXPECT_DEATH(hc_free(from_glibc), kInvalidPointer) << "a block from glibc's malloc";
    free(from_glibc);
    EXPECT_DEATH(hc_free(static_block + 16), kInvalidPointer) << "static data";
    long on_stack[4] = {};
    EXPECT_DEATH(hc_free(&on_stack[2]), kInvalidPointer) << "the stack";
    EXPECT_DEATH(hc_free(reinterpret_cast<void *>(uintptr_t{4096})), kInvalidPointer) << "page 1";
    EXPECT_DEATH(hc_free(reinterpret_cast<void *>(uintptr_t{0x7ff0} << 32)), kInvalidPointer)
        << "unmapped user address space";
}

TEST(BadInput, FreeOfAPointerInsideABlockAborts) {
    if (!HasFeature(HC_FEATURE_UNSIZED_FREE)) GTEST_SKIP() << MissingFeature("hc_free (the page map)");
    for (size_t size : {(size_t)16, (size_t)64, (size_t)3000, HC_MAX_SMALL_SIZE, HC_MAX_SMALL_SIZE * 3}) {
        char *p = static_cast<char *>(hc_malloc(size));
        ASSERT_NE(p, nullptr);
        EXPECT_DEATH(hc_free(p + 8), kInvalidPointer) << "8 bytes into a block of " << size;
        EXPECT_DEATH(hc_free(p + 1), kInvalidPointer) << "misaligned, inside a block of " << size;
        EXPECT_DEATH(hc_free(p + size - 8), kInvalidPointer) << "the last word of a block of " << size;
        hc_free(p);
    }
}

// ---- Debug builds: double free and wrong size (stage 3+) ------------------------

// Why a debug-only check cannot run here, or "" when it can.
std::string DebugCheckUnavailable() {
    if (!HC_DEBUG) return "built without HC_DEBUG; the debug flavour (bad_input_debug_test) runs it";
    if (!HasFeature(HC_FEATURE_UNSIZED_FREE))
        return "docs/design.md: the debug free checks come with stage 3's page map; " +
               MissingFeature("the page map");
    return "";
}

TEST(BadInputDebug, DoubleFreeAborts) {
    std::string why = DebugCheckUnavailable();
    if (!why.empty()) GTEST_SKIP() << why;
    for (size_t size : {(size_t)8, (size_t)64, (size_t)5000, HC_MAX_SMALL_SIZE + 1}) {
        // A large block's span may be gone by the second free: the pointer is
        // then simply not the allocator's, and either message will do.
        const char *message = size > HC_MAX_SMALL_SIZE ? "hcmalloc: .*(double free|invalid pointer)"
                                                       : "hcmalloc: .*double free";
        EXPECT_DEATH(
            {
                void *p = hc_malloc(size);
                hc_free_sized(p, size);
                hc_free_sized(p, size);
            },
            message)
            << "hc_free_sized twice, " << size << " bytes";
        EXPECT_DEATH(
            {
                void *p = hc_malloc(size);
                hc_free(p);
                hc_free(p);
            },
            message)
            << "hc_free twice, " << size << " bytes";
    }
}

TEST(BadInputDebug, FreeSizedWithTheWrongSizeAborts) {
    std::string why = DebugCheckUnavailable();
    if (!why.empty()) GTEST_SKIP() << why;
    struct {
        size_t allocated, freed;
    } cases[] = {{64, 4096}, {4096, 64}, {100, 1000}, {16, HC_MAX_SMALL_SIZE + 1}, {HC_MAX_SMALL_SIZE + 1, 16}};
    for (auto &c : cases) {
        // A size on the other side of the small/large line sends the free down
        // the other path, where the pointer is no block at all: either message.
        bool crosses = (c.allocated > HC_MAX_SMALL_SIZE) != (c.freed > HC_MAX_SMALL_SIZE);
        EXPECT_DEATH(
            {
                void *p = hc_malloc(c.allocated);
                hc_free_sized(p, c.freed);
            },
            crosses ? "hcmalloc: .*(wrong size|invalid pointer)" : "hcmalloc: .*wrong size")
            << "allocated " << c.allocated << ", freed as " << c.freed;
    }
}

}  // namespace
