// tests/conformance_test.cc — the API contract of docs/design.md, run on every stage.
//
// A test for a function the stage does not have yet skips, with the reason
// taken from hc_features(); it never passes silently.
#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <algorithm>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/test_util.h"

extern "C" {
#include "common/hcmalloc.h"
#include "common/os.h"
#include "common/size_class.h"
}

namespace {

using hc_test::HasFeature;
using hc_test::MissingFeature;

size_t RequiredAlignment(size_t size) { return size >= 16 ? 16 : 8; }

void ExpectAligned(const void *p, size_t size) {
    ASSERT_NE(p, nullptr) << "size " << size;
    ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % RequiredAlignment(size), 0u) << "size " << size;
}

TEST(Conformance, StageNameAndFeatures) {
    const char *expected = getenv("HC_EXPECTED_STAGE");
    ASSERT_NE(expected, nullptr) << "the test macro sets HC_EXPECTED_STAGE";
    EXPECT_STREQ(hc_stage_name(), expected);
    const unsigned all = HC_FEATURE_CENTRAL_CACHE | HC_FEATURE_UNSIZED_FREE |
                         HC_FEATURE_PAGE_CACHE | HC_FEATURE_THREAD_EXIT_RECLAIM |
                         HC_FEATURE_RELEASE_TO_OS;
    unsigned want = 0;
    std::string stage = expected;
    if (stage == "stage2_centralcache") want = HC_FEATURE_CENTRAL_CACHE;
    if (stage == "stage3_pagecache")
        want = HC_FEATURE_CENTRAL_CACHE | HC_FEATURE_UNSIZED_FREE | HC_FEATURE_PAGE_CACHE;
    if (stage == "stage4_reclaim") want = all;
    EXPECT_EQ(hc_features(), want);
}

TEST(Conformance, EverySizeClassIsAlignedAndWritable) {
    for (unsigned cls = 1; cls < HC_NUM_CLASSES; cls++) {
        size_t size = sc_size(cls);
        void *p = hc_malloc(size);
        ExpectAligned(p, size);
        memset(p, 0x5a, size);
        hc_free_sized(p, size);
    }
}

TEST(Conformance, EverySizeUpToTwiceTheLargestClassIsAligned) {
    // Every size up to 64 KiB, then a stride that still lands on every class.
    for (size_t size = 0; size <= 2 * HC_MAX_SMALL_SIZE; size += size < 65536 ? 1 : 509) {
        char *p = static_cast<char *>(hc_malloc(size));
        ExpectAligned(p, size);
        if (size > 0) {
            p[0] = 1;
            p[size - 1] = 2;
        }
        hc_free_sized(p, size);
    }
}

TEST(Conformance, MallocZeroIsUniqueAndFreeable) {
    std::set<void *> seen;
    std::vector<void *> ptrs;
    for (int i = 0; i < 100; i++) {
        void *p = hc_malloc(0);
        ASSERT_NE(p, nullptr);
        EXPECT_TRUE(seen.insert(p).second) << "hc_malloc(0) returned a pointer twice";
        ptrs.push_back(p);
    }
    for (void *p : ptrs) hc_free_sized(p, 0);
}

TEST(Conformance, CallocZeroes) {
    const size_t sizes[] = {1, 8, 24, 100, 1000, 4096, 50000, HC_MAX_SMALL_SIZE, HC_MAX_SMALL_SIZE + 1, 3 << 20};
    for (size_t size : sizes) {
        // Dirty a block of this size first, so a recycled one would show.
        void *dirty = hc_malloc(size);
        ASSERT_NE(dirty, nullptr);
        memset(dirty, 0xff, size);
        hc_free_sized(dirty, size);
        unsigned char *p = static_cast<unsigned char *>(hc_calloc(1, size));
        ASSERT_NE(p, nullptr);
        for (size_t i = 0; i < size; i++) ASSERT_EQ(p[i], 0) << "size " << size << " byte " << i;
        hc_free_sized(p, size);
        p = static_cast<unsigned char *>(hc_calloc(size, 1));
        ASSERT_NE(p, nullptr);
        hc_free_sized(p, size);
    }
}

TEST(Conformance, CallocOverflowIsENOMEM) {
    errno = 0;
    EXPECT_EQ(hc_calloc(SIZE_MAX / 2, 3), nullptr);
    EXPECT_EQ(errno, ENOMEM);
    errno = 0;
    EXPECT_EQ(hc_calloc((size_t)1 << 33, (size_t)1 << 31), nullptr);
    EXPECT_EQ(errno, ENOMEM);
}

TEST(Conformance, SizesNearSizeMaxAreENOMEM) {
    const size_t sizes[] = {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 4096, SIZE_MAX - 65536,
                            SIZE_MAX / 2 + 1, (size_t)1 << 62};
    for (size_t size : sizes) {
        errno = 0;
        EXPECT_EQ(hc_malloc(size), nullptr) << size;
        EXPECT_EQ(errno, ENOMEM) << size;
    }
}

TEST(Conformance, FreeOfNullIsHarmless) {
    hc_free_sized(nullptr, 0);
    hc_free_sized(nullptr, 64);
    hc_free_sized(nullptr, (size_t)1 << 30);
    hc_free(nullptr);  // defined on every stage for NULL
    void *p = hc_malloc(64);
    ASSERT_NE(p, nullptr);
    hc_free_sized(p, 64);
}

TEST(Conformance, MappingFailureIsENOMEMAndTheAllocatorRecovers) {
    const size_t big = (size_t)64 << 20;  // bigger than anything cached
    os_fail_next_maps(1u << 30);
    errno = 0;
    void *p = hc_malloc(big);
    int err = errno;
    os_fail_next_maps(0);
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(err, ENOMEM);

    // A thread that starts while mapping fails, then once it works again.
    std::thread([] {
        os_fail_next_maps(1u << 30);
        std::vector<std::pair<void *, size_t>> got;
        for (size_t size = 8; size <= HC_MAX_SMALL_SIZE; size *= 2) {
            errno = 0;
            void *q = hc_malloc(size);
            if (q == nullptr) EXPECT_EQ(errno, ENOMEM);
            else got.emplace_back(q, size);
        }
        os_fail_next_maps(0);
        for (auto &[q, size] : got) hc_free_sized(q, size);
        for (size_t size = 8; size <= HC_MAX_SMALL_SIZE; size *= 2) {
            void *q = hc_malloc(size);
            ASSERT_NE(q, nullptr) << "still failing after mapping recovered, size " << size;
            memset(q, 1, size);
            hc_free_sized(q, size);
        }
    }).join();

    p = hc_malloc(big);
    ASSERT_NE(p, nullptr);
    memset(p, 1, big);
    hc_free_sized(p, big);
}

// free never changes errno (POSIX.1-2024): not on the fast path, not when
// it unmaps a large block, not when a thread's first free finds no cache and
// the mapping for one fails (the object then goes straight to the layer
// below, and the failed mapping's ENOMEM must not leak out).
TEST(Conformance, FreeKeepsErrno) {
    const size_t big = (size_t)64 << 20;  // mapped for itself, unmapped by free
    void *small = hc_malloc(48);
    void *large = hc_malloc(big);
    ASSERT_TRUE(small != nullptr && large != nullptr);
    errno = 4242;
    hc_free_sized(large, big);
    EXPECT_EQ(errno, 4242) << "large free";
    void *again = hc_malloc(48);
    errno = 4242;
    hc_free_sized(again, 48);
    EXPECT_EQ(errno, 4242) << "fast-path free";

    // Each thread frees first, while mapping fails, then gets a cache: so the
    // threads use up the cache pool's chunk until one's first free needs a
    // mapping (stages that reuse an exited thread's cache may never need
    // one; the promise is checked all the same).
    static std::atomic<int> maps_tried;
    os_set_map_observer([](size_t) { maps_tried.fetch_add(1); });
    for (int i = 0; i < 200 && maps_tried.load() == 0; i++) {
        void *obj = hc_malloc(48);
        ASSERT_NE(obj, nullptr);
        std::thread([obj] {
            maps_tried.store(0);
            os_fail_next_maps(1u << 30);
            errno = 4242;
            hc_free_sized(obj, 48);  // no cache yet, and none can be made
            int err = errno;
            os_fail_next_maps(0);
            EXPECT_EQ(err, 4242) << "first free of a thread while mapping fails";
            hc_free_sized(hc_malloc(48), 48);  // now a cache: the pool's next record
        }).join();
    }
    os_set_map_observer(nullptr);
    hc_free_sized(small, 48);
}

TEST(Conformance, MemoryMayBeFreedByAnotherThread) {
    std::vector<void *> ptrs;
    for (int i = 0; i < 1000; i++) {
        void *p = hc_malloc(48);
        ASSERT_NE(p, nullptr);
        memset(p, i, 48);
        ptrs.push_back(p);
    }
    std::thread([&ptrs] {
        for (void *p : ptrs) hc_free_sized(p, 48);
    }).join();
    for (int i = 0; i < 1000; i++) hc_free_sized(hc_malloc(48), 48);
}

TEST(Conformance, FlushReleaseAndStatsAreCallable) {
    void *p = hc_malloc(100);
    ASSERT_NE(p, nullptr);
    hc_stats stats;
    hc_get_stats(&stats);
    EXPECT_GT(stats.os_mapped_bytes, 0u);
    EXPECT_GT(stats.metadata_bytes, 0u);
    EXPECT_LE(stats.metadata_bytes, stats.os_mapped_bytes);
    EXPECT_GE(stats.bytes_in_use, 100u);
    hc_free_sized(p, 100);
    hc_thread_flush();
    hc_release_free_memory();
    p = hc_malloc(100);
    ASSERT_NE(p, nullptr);
    hc_free_sized(p, 100);
}

// ---- Functions that arrive with stage 3's page map --------------------------

TEST(Conformance, MissingUnsizedFunctionsFailTheDocumentedWay) {
    if (HasFeature(HC_FEATURE_UNSIZED_FREE))
        GTEST_SKIP() << hc_stage_name() << " has unsized free; the tests below cover it";
    void *p = hc_malloc(32);
    ASSERT_NE(p, nullptr);
    memset(p, 7, 32);
    errno = 0;
    EXPECT_EQ(hc_realloc(p, 64), nullptr);
    EXPECT_EQ(errno, ENOMEM);
    EXPECT_EQ(static_cast<unsigned char *>(p)[31], 7) << "failed realloc leaves the block alone";
    errno = 0;
    EXPECT_EQ(hc_aligned_alloc(64, 64), nullptr);
    EXPECT_EQ(errno, ENOMEM);
    errno = 0;
    EXPECT_EQ(hc_aligned_alloc(3, 64), nullptr);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(hc_usable_size(nullptr), 0u);
    EXPECT_DEATH(hc_free(p), "hcmalloc: hc_free\\(\\) needs the page map of stage3_pagecache");
    EXPECT_DEATH(hc_usable_size(p), "stage3_pagecache");
    hc_free_sized(p, 32);
}

TEST(Conformance, UnsizedFreeOfEverySize) {
    if (!HasFeature(HC_FEATURE_UNSIZED_FREE)) GTEST_SKIP() << MissingFeature("hc_free");
    for (size_t size = 0; size <= 2 * HC_MAX_SMALL_SIZE; size += size < 4096 ? 1 : 1021) {
        char *p = static_cast<char *>(hc_malloc(size));
        ExpectAligned(p, size);
        size_t usable = hc_usable_size(p);
        EXPECT_GE(usable, size);
        if (usable > 0) memset(p, 3, usable);
        hc_free(p);
    }
    EXPECT_EQ(hc_usable_size(nullptr), 0u);
}

TEST(Conformance, ReallocKeepsContents) {
    if (!HasFeature(HC_FEATURE_UNSIZED_FREE)) GTEST_SKIP() << MissingFeature("hc_realloc");
    const size_t steps[] = {1, 8, 17, 100, 256, 257, 4000, 70000, HC_MAX_SMALL_SIZE,
                            HC_MAX_SMALL_SIZE + 1, 5 << 20, 300, 3};
    unsigned char *p = static_cast<unsigned char *>(hc_realloc(nullptr, 1));
    ASSERT_NE(p, nullptr);
    p[0] = 0;
    size_t have = 1;
    for (size_t want : steps) {
        unsigned char *q = static_cast<unsigned char *>(hc_realloc(p, want));
        ASSERT_NE(q, nullptr) << want;
        ExpectAligned(q, want);
        size_t keep = have < want ? have : want;
        for (size_t i = 0; i < keep; i++) ASSERT_EQ(q[i], static_cast<unsigned char>(i * 7)) << want;
        for (size_t i = 0; i < want; i++) q[i] = static_cast<unsigned char>(i * 7);
        p = q;
        have = want;
    }
    errno = 0;
    EXPECT_EQ(hc_realloc(p, SIZE_MAX - 10), nullptr);
    EXPECT_EQ(errno, ENOMEM);
    for (size_t i = 0; i < have; i++) ASSERT_EQ(p[i], static_cast<unsigned char>(i * 7)) << "old block kept";
    hc_free(p);
}

TEST(Conformance, ReallocToZeroFreesAndReturnsNull) {
    if (!HasFeature(HC_FEATURE_UNSIZED_FREE)) GTEST_SKIP() << MissingFeature("hc_realloc");
    for (size_t size : {(size_t)1, (size_t)100, HC_MAX_SMALL_SIZE + 1}) {
        void *p = hc_malloc(size);
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(hc_realloc(p, 0), nullptr) << "glibc's realloc(p, 0): p is freed, NULL returned";
    }
}

// Growing by small steps (a string appended to): a large block grows into
// the free pages after it, or moves with room to spare, so it moves a few
// times, not once per page (a copy of the whole block each time).
TEST(Conformance, ReallocGrowingByLittleStepsRarelyMoves) {
    if (!HasFeature(HC_FEATURE_PAGE_CACHE)) GTEST_SKIP() << MissingFeature("large blocks resized in place");
    size_t size = HC_MAX_SMALL_SIZE + 1;
    unsigned char *p = static_cast<unsigned char *>(hc_malloc(size));
    ASSERT_NE(p, nullptr);
    for (size_t i = 0; i < size; i++) p[i] = static_cast<unsigned char>(i * 7);
    int moves = 0;
    for (; size < ((size_t)16 << 20); size += 1000) {
        unsigned char *q = static_cast<unsigned char *>(hc_realloc(p, size + 1000));
        ASSERT_NE(q, nullptr);
        moves += q != p;
        for (size_t i = size; i < size + 1000; i++) q[i] = static_cast<unsigned char>(i * 7);
        p = q;
    }
    std::printf("256 KiB -> 16 MiB by 1000 bytes: %d moves\n", moves);
    EXPECT_LE(moves, 30) << "a copy per page would be 2,000 moves";
    for (size_t i = 0; i < size; i++) ASSERT_EQ(p[i], static_cast<unsigned char>(i * 7)) << i;
    // Shrinking gives the tail back where the block is: it never moves.
    for (; size > HC_MAX_SMALL_SIZE + 1000; size -= 1000) {
        unsigned char *q = static_cast<unsigned char *>(hc_realloc(p, size - 1000));
        ASSERT_EQ(q, p) << size - 1000;
    }
    for (size_t i = 0; i < size; i++) ASSERT_EQ(p[i], static_cast<unsigned char>(i * 7)) << i;
    hc_free(p);
}

// A large block that must move to grow (the pages after it are in use)
// takes room to spare: half as many pages again, so the next small steps
// grow it in place instead of moving it again.
TEST(Conformance, ReallocThatMustMoveTakesRoomToGrow) {
    if (!HasFeature(HC_FEATURE_PAGE_CACHE)) GTEST_SKIP() << MissingFeature("large blocks resized in place");
    const size_t kSize = 1 << 20;
    std::vector<char *> blocks;
    for (int i = 0; i < 64; i++) blocks.push_back(static_cast<char *>(hc_malloc(kSize)));
    std::set<char *> starts(blocks.begin(), blocks.end());
    char *blocked = nullptr;  // a block whose next pages are another block
    for (char *b : blocks)
        if (starts.count(b + kSize)) blocked = b;
    ASSERT_NE(blocked, nullptr) << "consecutive large blocks are carved from one free span";
    memset(blocked, 5, kSize);
    char *moved = static_cast<char *>(hc_realloc(blocked, kSize + 1));
    ASSERT_NE(moved, nullptr);
    EXPECT_NE(moved, blocked) << "its next pages are in use";
    EXPECT_GE(hc_usable_size(moved), kSize + kSize / 2);
    for (size_t i = 0; i < kSize; i++) ASSERT_EQ(moved[i], 5) << i;
    std::replace(blocks.begin(), blocks.end(), blocked, moved);
    for (char *b : blocks) hc_free(b);
}

// Virtual size of this process, from /proc/self/statm (no allocation).
size_t AddressSpaceBytes() {
    char buf[128] = {0};
    int fd = open("/proc/self/statm", O_RDONLY);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    unsigned long size = 0;
    if (n > 0) sscanf(buf, "%lu", &size);
    return size * (size_t)sysconf(_SC_PAGESIZE);
}

// Runs `body` in a forked child, so that an address-space limit set there
// stays there, and returns its exit code (-1: it did not exit normally).
template <typename Body>
int ExitCodeInChild(Body body) {
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) _exit(body());
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
}

// Limits this process's address space to what it has now plus `headroom`.
bool LimitAddressSpace(size_t headroom) {
    struct rlimit limit;
    limit.rlim_cur = limit.rlim_max = AddressSpaceBytes() + headroom;
    return setrlimit(RLIMIT_AS, &limit) == 0;
}

// Shrinking in place needs no second block: 400 MiB -> 300 MiB (a direct
// mapping) and 40 MiB -> 30 MiB (heap pages) succeed in a child whose
// address-space limit leaves 64 MiB, where a copy would need 300 MiB more.
TEST(Conformance, ReallocShrinksInPlaceUnderAnAddressSpaceLimit) {
    if (!HasFeature(HC_FEATURE_PAGE_CACHE)) GTEST_SKIP() << MissingFeature("large blocks resized in place");
    int code = ExitCodeInChild([] {
        char *huge = static_cast<char *>(hc_malloc((size_t)400 << 20));
        char *big = static_cast<char *>(hc_malloc((size_t)40 << 20));
        if (huge == nullptr || big == nullptr) return 2;
        huge[0] = big[0] = 1;
        huge[(300 << 20) - 1] = big[(30 << 20) - 1] = 2;
        if (!LimitAddressSpace((size_t)64 << 20)) return 3;
        if (hc_malloc((size_t)300 << 20) != nullptr) return 4;  // the limit holds
        char *huge2 = static_cast<char *>(hc_realloc(huge, (size_t)300 << 20));
        char *big2 = static_cast<char *>(hc_realloc(big, (size_t)30 << 20));
        if (huge2 != huge || big2 != big) return 5;
        if (huge[0] != 1 || huge[(300 << 20) - 1] != 2 || big[0] != 1 || big[(30 << 20) - 1] != 2)
            return 6;
        return 0;
    });
    EXPECT_EQ(code, 0) << "-1: crashed, 2: no blocks, 3: setrlimit, 4: no limit, 5: moved or NULL, "
                          "6: contents lost";
}

// The page cache grows its heap with headroom (a quarter of the heap), but
// under an address-space limit (ulimit -v) it must still take just what a
// request needs when the headroom does not fit: with 200 MiB of heap in use
// and its free pages used up, a limit that leaves 48 MiB still gives three
// blocks of 10 MiB (a quarter of the heap, 50 MiB, would not fit at all).
TEST(Conformance, HeapGrowthFitsUnderAnAddressSpaceLimit) {
    if (!HasFeature(HC_FEATURE_PAGE_CACHE)) GTEST_SKIP() << MissingFeature("a page cache that grows");
    int code = ExitCodeInChild([] {
        const size_t block = (size_t)10 << 20;
        for (int i = 0; i < 20; i++)
            if (hc_malloc(block) == nullptr) return 2;
        for (int i = 0; i < 64; i++) { // use up the free pages the last growth left
            hc_stats st;
            hc_get_stats(&st);
            if (st.page_cache_free_bytes + st.released_bytes < block) break;
            if (hc_malloc(block) == nullptr) return 2;
        }
        if (!LimitAddressSpace((size_t)48 << 20)) return 3;
        int got = 0;
        while (got < 8 && hc_malloc(block) != nullptr) got++;
        return got >= 3 ? 0 : 10 + got;
    });
    EXPECT_EQ(code, 0) << "-1: crashed, 2: no heap, 3: setrlimit, 10 + N: only N blocks of 10 MiB "
                          "under the limit";
}

TEST(Conformance, AlignedAllocEveryPowerOfTwo) {
    if (!HasFeature(HC_FEATURE_UNSIZED_FREE)) GTEST_SKIP() << MissingFeature("hc_aligned_alloc");
    for (size_t align = 1; align <= ((size_t)4 << 20); align *= 2) {
        for (size_t size : {(size_t)1, align / 2 + 1, align, 3 * align + 5}) {
            void *p = hc_aligned_alloc(align, size);
            ASSERT_NE(p, nullptr) << align << " " << size;
            EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % align, 0u) << align;
            EXPECT_GE(hc_usable_size(p), size);
            memset(p, 9, size);
            hc_free(p);
        }
    }
    for (size_t bad : {(size_t)0, (size_t)3, (size_t)24, (size_t)1000, SIZE_MAX}) {
        errno = 0;
        EXPECT_EQ(hc_aligned_alloc(bad, 64), nullptr) << bad;
        EXPECT_EQ(errno, EINVAL) << bad;
    }
}

TEST(Conformance, InvalidFreeAborts) {
    if (!HasFeature(HC_FEATURE_UNSIZED_FREE)) GTEST_SKIP() << MissingFeature("hc_free");
    int on_stack = 0;
    EXPECT_DEATH(hc_free(&on_stack), "hcmalloc: free\\(\\): invalid pointer 0x");
    char *p = static_cast<char *>(hc_malloc(64));
    ASSERT_NE(p, nullptr);
    EXPECT_DEATH(hc_free(p + 16), "hcmalloc: free\\(\\): invalid pointer 0x");
    hc_free(p);
}

}  // namespace
