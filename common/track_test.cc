// common/track_test.cc — what each hook of track.h tells the checker.
//
// Built only in the checker flavours (common/BUILD: track_test_asan,
// track_test_valgrind), where the hooks do something: the test asks the
// checker itself which bytes the program may touch after each hook, without
// touching them (a touch would be the very error the checker reports).
#include <gtest/gtest.h>
#include <string.h>
#include <sys/mman.h>

extern "C" {
#include "common/os.h"
#include "common/track.h"
}

#if HC_TRACK_ASAN
#include <sanitizer/asan_interface.h>
#elif HC_TRACK_VALGRIND
#include <valgrind/memcheck.h>
#include <valgrind/valgrind.h>
#else
#error "track_test is built only in the asan and valgrind flavours (common/BUILD)"
#endif

namespace {

// May the program touch byte p? Asked of the checker, not by touching.
bool Addressable(const void *p) {
#if HC_TRACK_ASAN
    return !__asan_address_is_poisoned(p);
#else
    unsigned char vbits;
    // 3: some byte is unaddressable (and, unlike a touch, no error is logged).
    return VALGRIND_GET_VBITS(p, &vbits, 1) != 3;
#endif
}

class Track : public ::testing::Test {
   protected:
    void SetUp() override {
#if HC_TRACK_VALGRIND
        if (!RUNNING_ON_VALGRIND) GTEST_SKIP() << "built for memcheck; run it under valgrind (track_test_valgrind)";
#endif
        region_ = static_cast<unsigned char *>(os_map(kRegion));
        ASSERT_NE(region_, nullptr);
        track_internal_end(region_, kRegion);  // as a stage does with fresh memory
    }
    void TearDown() override {
        if (region_ != nullptr) os_unmap(region_, kRegion);
    }
    static constexpr size_t kRegion = 64 * 1024;
    unsigned char *region_ = nullptr;
};

TEST_F(Track, FreshMemoryIsOffLimitsUntilHandedOut) {
    EXPECT_FALSE(Addressable(region_));
    EXPECT_FALSE(Addressable(region_ + 100));
    EXPECT_FALSE(Addressable(region_ + kRegion - 1));
}

TEST_F(Track, AllocOpensExactlyTheBytesAskedFor) {
    unsigned char *p = region_ + 64;
    track_alloc(p, 20, 0);
    EXPECT_TRUE(Addressable(p));
    EXPECT_TRUE(Addressable(p + 19));
    EXPECT_FALSE(Addressable(p + 20)) << "the slot's unused tail";
    EXPECT_FALSE(Addressable(p - 1)) << "the slot before";
    memset(p, 7, 20);
    track_free(p, 20);
    EXPECT_FALSE(Addressable(p)) << "a freed block";
    EXPECT_FALSE(Addressable(p + 19));
}

TEST_F(Track, FreeOfNullDoesNothing) {
    track_free(nullptr, 0);
    track_free(nullptr, 64);
    track_alloc(nullptr, 64, 0);
}

TEST_F(Track, InternalAccessOpensOnlyTheLinkWord) {
    unsigned char *obj = region_ + 128;
    track_internal_begin(obj, sizeof(void *));
    EXPECT_TRUE(Addressable(obj));
    EXPECT_FALSE(Addressable(obj + sizeof(void *)));
    *(void **)obj = region_;
    track_internal_end(obj, sizeof(void *));
    EXPECT_FALSE(Addressable(obj));
    track_internal_begin(obj, sizeof(void *));
    EXPECT_EQ(*(void **)obj, region_) << "the link survives being hidden";
    track_internal_end(obj, sizeof(void *));
}

TEST_F(Track, ResizeInPlaceKeepsContentsAndMovesTheEnd) {
    unsigned char *p = region_ + 256;
    track_alloc(p, 20, 0);
    for (int i = 0; i < 20; i++) p[i] = static_cast<unsigned char>(i);
    track_resize(p, 32, 30);  // grow within its 32-byte slot
    EXPECT_TRUE(Addressable(p + 29));
    EXPECT_FALSE(Addressable(p + 30));
    for (int i = 0; i < 20; i++) ASSERT_EQ(p[i], i) << "contents kept";
    track_resize(p, 32, 10);  // shrink
    EXPECT_TRUE(Addressable(p + 9));
    EXPECT_FALSE(Addressable(p + 10));
    for (int i = 0; i < 10; i++) ASSERT_EQ(p[i], i) << "contents kept";
    track_free(p, 10);
    EXPECT_FALSE(Addressable(p));
}

TEST_F(Track, UnmappedPagesForgetWhatTheCheckerWasTold) {
    // A later mapping at the same address must start clean (os_unmap).
    unsigned char *old = region_;
    os_unmap(region_, kRegion);
    region_ = nullptr;
    void *again = mmap(old, kRegion, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                       -1, 0);
    if (again == MAP_FAILED) GTEST_SKIP() << "the address was taken again before the test could map it";
    EXPECT_TRUE(Addressable(again));
    EXPECT_TRUE(Addressable(static_cast<unsigned char *>(again) + kRegion - 1));
    munmap(again, kRegion);
}

}  // namespace
