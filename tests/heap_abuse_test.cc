// tests/heap_abuse_test.cc — the classic heap exploits' first steps (the
// how2heap catalogue, adapted), against the default build and the hardened
// one (common/harden.h). Stage 3 and 4 run it as heap_abuse_test (default)
// and heap_abuse_hardened_test (the same file with HC_HARDENED=1, through
// tests/flavours.bzl). Each mistake runs in a forked child (EXPECT_EXIT), in
// a size class no other test here uses, so the damage stays there.
//
// The hardened build must stop every one with its one-line message before
// a forged pointer is handed out. The default build does what
// docs/design.md, section 6, says it does: a double free through free()
// stops at the call (free's tag, common/harden.h), in every pattern below;
// a forged link is followed, and the test shows where it leads (a harmless
// buffer of its own).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <thread>
#include <vector>

extern "C" {
#include "common/harden.h"
#include "common/harden_guard.h"
#include "common/hcmalloc.h"
#include "common/os.h"
}

namespace {

using ::testing::ExitedWithCode;
using ::testing::KilledBySignal;

constexpr const char *kCorruptLink = "^hcmalloc: malloc\\(\\): corrupted free list at 0x[0-9a-f]+ \\(.*\\)\n$";
constexpr const char *kDoubleFree = "^hcmalloc: free\\(\\): double free detected of 0x[0-9a-f]+ \\(.*\\)\n$";
// The default build's tag, by where the first free left the block: this
// thread's list (walked to say so), or anywhere else.
constexpr const char *kDoubleFreeHere =
    "^hcmalloc: free\\(\\): double free detected of 0x[0-9a-f]+ \\(it is on this thread's free list\\)\n$";
constexpr const char *kDoubleFreeElsewhere =
    "^hcmalloc: free\\(\\): double free detected of 0x[0-9a-f]+ \\(it is already free: another thread's "
    "cache or a shared list holds it\\)\n$";
// What each build says of a double free within one thread.
constexpr const char *kDoubleFreeSameThread = HC_HARDENED ? kDoubleFree : kDoubleFreeHere;

// Where a forged link points: memory of the test's own, so that the default
// build, which follows the link, hands out something harmless.
alignas(64) unsigned char forged_target[256];

// n frees and mallocs of `size`: the class is warm, its list longer than 2.
void Warm(size_t size, int n = 64) {
    void *p[64];
    for (int i = 0; i < n; i++) p[i] = hc_malloc(size);
    for (int i = n; i-- > 0;) hc_free(p[i]);
}

// ---- Use after free: a write into a free object's link ----------------------------

// The program keeps a pointer to b after freeing it and writes an address
// into its first word: the second malloc would return that address.
void UafWriteOfALink() {
    Warm(48);
    void *a = hc_malloc(48), *b = hc_malloc(48);
    hc_free(a);
    hc_free(b); // the list: b -> a -> ...
    *(void **)b = forged_target;
    void *first = hc_malloc(48);
    void *second = hc_malloc(48);
    _exit(first == b && second == forged_target ? 0 : 1);
}

TEST(HeapAbuseDeathTest, UseAfterFreeWriteOfALink) {
    if (HC_HARDENED)
        EXPECT_EXIT(UafWriteOfALink(), KilledBySignal(SIGABRT), kCorruptLink);
    else
        EXPECT_EXIT(UafWriteOfALink(), ExitedWithCode(0), "") << "the default build follows a forged link";
}

// The same with 0 written (a freed block cleared by the program). The
// hardened build sees a forgery (0 is not how a link is stored); the
// default build an end of list that comes too early: when the list runs
// dry, its count says objects are left, and the refill stops.
void UafZeroOfALink() {
    Warm(80);
    void *a = hc_malloc(80), *b = hc_malloc(80);
    hc_free(a);
    hc_free(b);
    memset(b, 0, 16);
    void *first = hc_malloc(80);
    void *second = hc_malloc(80);
    _exit(first == b && second != a ? 0 : 1);
}

TEST(HeapAbuseDeathTest, UseAfterFreeZeroOfALink) {
    EXPECT_EXIT(UafZeroOfALink(), KilledBySignal(SIGABRT), kCorruptLink);
}

// ---- Overflow into a free neighbour ----------------------------------------------

// Objects of a fresh span are handed out in address order, so b follows a;
// an overflow of a writes b's link (and, hardened, its tag).
void OverflowIntoAFreeNeighbour() {
    void *a = hc_malloc(112), *b = hc_malloc(112);
    if ((char *)b != (char *)a + 112) _exit(2); // not neighbours: the test is wrong
    hc_free(b);
    unsigned char overflow[112 + 16];
    memset(overflow, 'A', sizeof overflow);
    void *target = forged_target;
    memcpy(overflow + 112, &target, sizeof target); // b's first word
    memcpy(a, overflow, sizeof overflow);
    void *first = hc_malloc(112);
    void *second = hc_malloc(112);
    _exit(first == b && second == forged_target ? 0 : 1);
}

TEST(HeapAbuseDeathTest, OverflowIntoAFreeNeighbour) {
    if (HC_HARDENED)
        EXPECT_EXIT(OverflowIntoAFreeNeighbour(), KilledBySignal(SIGABRT), kCorruptLink);
    else
        EXPECT_EXIT(OverflowIntoAFreeNeighbour(), ExitedWithCode(0), "");
}

// ---- Double free ------------------------------------------------------------------

// Cold: the class's first block, freed twice: the second free stops at the
// call, whether the list had room for it (fast path) or not (slow path).
// Every _exit(1) below is reached only if the double free went through.
void DoubleFreeCold() {
    void *p = hc_malloc(160);
    hc_free(p);
    hc_free(p);
    _exit(1);
}

TEST(HeapAbuseDeathTest, DoubleFreeCold) {
    EXPECT_EXIT(DoubleFreeCold(), KilledBySignal(SIGABRT), kDoubleFreeSameThread);
}

// Warm: the list is long; the second free is the fast path's in both builds.
void DoubleFreeWarm() {
    Warm(192);
    void *p = hc_malloc(192);
    hc_free(p);
    hc_free(p);
    _exit(1);
}

TEST(HeapAbuseDeathTest, DoubleFreeWarm) {
    EXPECT_EXIT(DoubleFreeWarm(), KilledBySignal(SIGABRT), kDoubleFreeSameThread);
}

// The 1000-byte case of the hostile-program reports: 16 warm-up pairs, then a double free,
// which used to link the list to itself and crash two mallocs later.
void DoubleFreeAfterWarmUpPairs() {
    for (int i = 0; i < 16; i++) hc_free(hc_malloc(1000));
    void *p = hc_malloc(1000);
    hc_free(p);
    hc_free(p);
    _exit(1);
}

TEST(HeapAbuseDeathTest, DoubleFreeAfterWarmUpPairs) {
    EXPECT_EXIT(DoubleFreeAfterWarmUpPairs(), KilledBySignal(SIGABRT), kDoubleFreeSameThread);
}

// a; b; a: no object is freed twice in a row, so no compare with the
// list's head sees it; the tag does. (Let through, it made the cycle
// a -> b -> a, and the program's writes into the block it got twice then
// became links the allocator followed.)
void DoubleFreeABA() {
    Warm(224);
    void *a = hc_malloc(224), *b = hc_malloc(224);
    hc_free(a);
    hc_free(b);
    hc_free(a);
    _exit(1);
}

TEST(HeapAbuseDeathTest, DoubleFreeABA) {
    EXPECT_EXIT(DoubleFreeABA(), KilledBySignal(SIGABRT), kDoubleFreeSameThread);
}

// a; b; c; ...; a with the whole list in between: still one compare.
void DoubleFreeWithManyBetween() {
    void *p[40];
    for (int i = 0; i < 40; i++) p[i] = hc_malloc(240);
    for (int i = 0; i < 40; i++) hc_free(p[i]);
    hc_free(p[0]);
    _exit(1);
}

TEST(HeapAbuseDeathTest, DoubleFreeWithManyBetween) {
    EXPECT_EXIT(DoubleFreeWithManyBetween(), KilledBySignal(SIGABRT),
                HC_HARDENED ? kDoubleFree : "^hcmalloc: free\\(\\): double free detected of 0x[0-9a-f]+ .*\n$");
}

// The second free when the list is full goes to the slow path, which checks
// the tag the fast path did not reach: caught at the call in both builds.
void DoubleFreeIntoAFullList() {
    void *p = hc_malloc(2048); // slow start: the list's limit is 2 now
    void *q = hc_malloc(2048);
    hc_free(q);
    hc_free(p);
    hc_free(p); // the list is at its limit: the slow path
    _exit(0);
}

TEST(HeapAbuseDeathTest, DoubleFreeIntoAFullList) {
    EXPECT_EXIT(DoubleFreeIntoAFullList(), KilledBySignal(SIGABRT), kDoubleFreeSameThread);
}

// Across threads: the first thread's free leaves the block on its list
// (the first case) or, flushed, in the central cache (the second); either
// way it keeps its tag, and the other thread's free stops at the call. A
// neighbour stays live so that the span stays a span.
void DoubleFreeAcrossThreads(bool flush_first) {
    void *p = hc_malloc(3000), *neighbour = hc_malloc(3000);
    (void)neighbour;
    std::thread([p, flush_first] {
        hc_free(p);
        if (flush_first) hc_thread_flush();
        std::thread([p] { hc_free(p); }).join();
    }).join();
    _exit(1);
}

TEST(HeapAbuseDeathTest, DoubleFreeAcrossThreads) {
    const char *expected = HC_HARDENED ? kDoubleFree : kDoubleFreeElsewhere;
    EXPECT_EXIT(DoubleFreeAcrossThreads(false), KilledBySignal(SIGABRT), expected);
    EXPECT_EXIT(DoubleFreeAcrossThreads(true), KilledBySignal(SIGABRT), expected);
}

// ---- malloc(0) given back with its size -------------------------------------------

// free_sized(malloc(0), 0) is a correct call. The default build's malloc(0)
// is a 16-byte block, which malloc(16) may then reuse; the hardened
// build's is an address that faults when touched, and must never land on a
// list where a later malloc would hand it out.
void ZeroSizeBlockFreedWithItsSize() {
    for (int i = 0; i < 64; i++) {
        void *zero = hc_malloc(0);
        hc_free_sized(zero, 0);
        for (int j = 0; j < 4; j++) {
            char *p = static_cast<char *>(hc_malloc(16));
            if (p == nullptr) _exit(2);
            memset(p, 0x5a, 16); /* faults if it is the hardened build's malloc(0) address */
        }
    }
    _exit(0);
}

TEST(HeapAbuseDeathTest, ZeroSizeBlockFreedWithItsSize) {
    EXPECT_EXIT(ZeroSizeBlockFreedWithItsSize(), ExitedWithCode(0), "");
}

// ---- A slot never handed out ------------------------------------------------------

// p + 20 objects is a slot of p's span that no malloc has returned. The
// hardened build tags every carved slot as free, so the free stops at the
// call. The default build cannot tell at the call; it is caught when the
// slot reaches its span, which holds it already.
void FreeOfASlotNeverHandedOut() {
    char *p = static_cast<char *>(hc_malloc(48));
    hc_free(p + 20 * 48);
    hc_thread_flush();
    _exit(0);
}

TEST(HeapAbuseDeathTest, FreeOfASlotNeverHandedOut) {
    EXPECT_EXIT(FreeOfASlotNeverHandedOut(), KilledBySignal(SIGABRT),
                HC_HARDENED ? kDoubleFree : "^hcmalloc: free\\(\\): .* 0x[0-9a-f]+.*\n$");
}

// ---- The next slot, reuse --------------------------------------------------------

// free(p + size): the start of the next slot, never handed out (a fresh
// class's span is carved in address order). The hardened build tagged it
// when it was carved; the default build catches it when the slot comes home.
void FreeOfTheNextSlotsStart() {
    char *p = static_cast<char *>(hc_malloc(320));
    hc_free(p + 320);
    hc_thread_flush();
    _exit(0);
}

TEST(HeapAbuseDeathTest, FreeOfTheNextSlotsStart) {
    EXPECT_EXIT(FreeOfTheNextSlotsStart(), KilledBySignal(SIGABRT),
                HC_HARDENED ? kDoubleFree : "^hcmalloc: free\\(\\): .* 0x[0-9a-f]+.*\n$");
}

// A freed block is not the next malloc's in the hardened build: hc_free puts
// it behind its list's head (harden.h). The default build is LIFO.
TEST(HeapAbuse, FreedBlockIsNotHandedStraightBack) {
    Warm(384);
    void *a = hc_malloc(384);
    hc_free(a);
    void *b = hc_malloc(384);
    if (HC_HARDENED)
        EXPECT_NE(b, a) << "a use after free of a reads another block's data, not b's";
    else
        EXPECT_EQ(b, a);
    void *c = hc_malloc(384);
    EXPECT_TRUE(HC_HARDENED ? c == a : c != a) << "one malloc later it is";
    hc_free(b);
    hc_free(c);
}

// The old owner frees a block a second time after a malloc: in the default
// build the malloc reused it, so that free frees the new owner's block,
// unseen, and only the new owner's free stops. In the hardened build the
// block was not reused, and the second free stops at its call.
void DoubleFreeAfterAMalloc() {
    Warm(448);
    void *a = hc_malloc(448);
    hc_free(a);
    void *b = hc_malloc(448);
    hc_free(a);
    fprintf(stderr, "passed the old owner's free\n");
    hc_free(b);
    _exit(0);
}

TEST(HeapAbuseDeathTest, DoubleFreeAfterAMalloc) {
    EXPECT_EXIT(DoubleFreeAfterAMalloc(), KilledBySignal(SIGABRT),
                HC_HARDENED ? kDoubleFree
                            : "^passed the old owner's free\nhcmalloc: free\\(\\): double free detected of "
                              "0x[0-9a-f]+ .*\n$");
}

#if HC_HARDENED
// The hardened drop-in's sized delete and free_sized: a size of another
// class stops (the `delete` of a `new char[4096]` gives 1; a wrong type
// another size; a free_sized given another block's size); the sizes of the
// block's own class free it.
constexpr const char *kDeleteWrongSize = "delete(): wrong size for the block at";

TEST(HeapAbuseDeathTest, SizedDeleteWithTheWrongSizeAborts) {
    constexpr const char *kWrongSize = "^hcmalloc: delete\\(\\): wrong size for the block at 0x[0-9a-f]+\n$";
    void *array = hc_malloc(4096);
    ASSERT_NE(array, nullptr);
    EXPECT_EXIT(harden_sized_free(array, 1, kDeleteWrongSize), KilledBySignal(SIGABRT), kWrongSize);
    EXPECT_EXIT(harden_sized_free(array, 4096 + 1, kDeleteWrongSize), KilledBySignal(SIGABRT), kWrongSize);
    harden_sized_free(array, 4096, kDeleteWrongSize);
    void *small = hc_malloc(72);
    ASSERT_NE(small, nullptr);
    EXPECT_EXIT(harden_sized_free(small, 16, kDeleteWrongSize), KilledBySignal(SIGABRT), kWrongSize);
    harden_sized_free(small, 65, kDeleteWrongSize); /* 65..80: the 80-byte class */
    void *large = hc_malloc(1 << 20); /* a guarded block: new gave it its size */
    ASSERT_NE(large, nullptr);
    EXPECT_EXIT(harden_sized_free(large, 1, kDeleteWrongSize), KilledBySignal(SIGABRT), kWrongSize);
    harden_sized_free(large, 1 << 20, kDeleteWrongSize);
}

// The caller's words are the message's: free_sized's own, and a block of
// the table's sizes (1..4 KiB) given a size of another of them, which the
// sized fast path would have put on that size's list.
TEST(HeapAbuseDeathTest, FreeSizedWithTheWrongSizeAbortsAtTheCall) {
    constexpr const char *kFreeSizedWrongSize = "free_sized(): wrong size for the block at";
    constexpr const char *kWrongSize = "^hcmalloc: free_sized\\(\\): wrong size for the block at 0x[0-9a-f]+\n$";
    void *block = hc_malloc(3000);
    ASSERT_NE(block, nullptr);
    EXPECT_EXIT(harden_sized_free(block, 2000, kFreeSizedWrongSize), KilledBySignal(SIGABRT), kWrongSize);
    EXPECT_EXIT(harden_sized_free(block, 0, kFreeSizedWrongSize), KilledBySignal(SIGABRT), kWrongSize);
    harden_sized_free(block, 3000, kFreeSizedWrongSize);
    harden_sized_free(nullptr, 10, kFreeSizedWrongSize);
}

// An aligned block's size names the class hc_aligned_alloc took for it:
// 64 bytes at 64 is the 64-byte class, which 48 at 64 names too (the
// alignment raises it), and 128 at 64 does not; 40 bytes at 32 is the
// 64-byte class as well (48 is no multiple of 32). An alignment that is no
// power of two names no aligned block.
TEST(HeapAbuseDeathTest, AlignedSizedFreeWithTheWrongSizeAborts) {
    constexpr const char *kWrongSize = "^hcmalloc: delete\\(\\): wrong size for the block at 0x[0-9a-f]+\n$";
    void *block = hc_aligned_alloc(64, 64);
    ASSERT_NE(block, nullptr);
    EXPECT_EXIT(harden_aligned_sized_free(block, 64, 128, kDeleteWrongSize), KilledBySignal(SIGABRT), kWrongSize);
    EXPECT_EXIT(harden_aligned_sized_free(block, 48, 64, kDeleteWrongSize), KilledBySignal(SIGABRT), kWrongSize);
    harden_aligned_sized_free(block, 64, 48, kDeleteWrongSize);
    void *forty = hc_aligned_alloc(32, 40);
    ASSERT_NE(forty, nullptr);
    ASSERT_EQ(hc_usable_size(forty), 64u);
    harden_aligned_sized_free(forty, 32, 40, kDeleteWrongSize);
    harden_aligned_sized_free(nullptr, 64, 64, kDeleteWrongSize);
}

// malloc_usable_size of a freed block: its tag says it is free.
TEST(HeapAbuseDeathTest, UsableSizeOfAFreedBlockAborts) {
    if (HC_TRACK_ASAN || HC_TRACK_VALGRIND)
        GTEST_SKIP() << "a checker guards the freed block's words; the hardened build does not read them there";
    void *block = hc_malloc(16);
    ASSERT_NE(block, nullptr);
    ASSERT_GE(hc_usable_size(block), 16u);
    hc_free(block);
    EXPECT_EXIT(hc_usable_size(block), KilledBySignal(SIGABRT),
                "^hcmalloc: malloc_usable_size\\(\\): invalid pointer 0x[0-9a-f]+ \\(it is free\\)\n$");
}

// ---- The 8-byte blocks' canary (common/harden.h) ---------------------------------------

constexpr const char *kOverflow =
    "^hcmalloc: free\\(\\): overflow detected past the block at 0x[0-9a-f]+ \\(.*\\)\n$";

// The ways a small block comes back: each checks the canary.
enum class GiveBack { kFree, kFreeSized, kReallocInPlace, kReallocGrowing };

// mimalloc-bench's one_byte_overflow at 8 bytes: the byte after an 8-byte
// block changed (XORed, as the program does, or set to 0, as a string's
// terminator one past the end would be), then the block goes back. In the
// default build that byte is the block's own (its class holds 16).
void OverflowAnEightByteBlock(GiveBack how, bool terminator) {
    Warm(8);
    volatile char *p = (volatile char *)hc_malloc(8);
    void *neighbour = hc_malloc(8);
    for (int i = 0; i < 8; i++) p[i] = 'x';
    if (terminator)
        p[8] = 0;
    else
        p[8] ^= 'A';
    void *block = (void *)p;
    switch (how) {
    case GiveBack::kFree: hc_free(block); break;
    case GiveBack::kFreeSized: hc_free_sized(block, 8); break;
    case GiveBack::kReallocInPlace: block = hc_realloc(block, 5); break;
    case GiveBack::kReallocGrowing: block = hc_realloc(block, 40); break;
    }
    fputs("passed the call\n", stderr); // the hardened build stops in it, not later
    if (how == GiveBack::kReallocInPlace || how == GiveBack::kReallocGrowing)
        hc_free(block);
    hc_free(neighbour);
    _exit(0);
}

TEST(HeapAbuseDeathTest, OverflowOfAnEightByteBlockStopsWhenItComesBack) {
    for (GiveBack how : {GiveBack::kFree, GiveBack::kFreeSized, GiveBack::kReallocInPlace,
                         GiveBack::kReallocGrowing})
        for (bool terminator : {false, true}) {
            SCOPED_TRACE(testing::Message() << "way " << (int)how << ", terminator " << terminator);
            if (HC_HARDENED)
                EXPECT_EXIT(OverflowAnEightByteBlock(how, terminator), KilledBySignal(SIGABRT), kOverflow);
            else
                EXPECT_EXIT(OverflowAnEightByteBlock(how, terminator), ExitedWithCode(0), "")
                    << "the default build's 16-byte class holds those bytes";
        }
}

// Every byte malloc_usable_size reports is the program's: a block filled to
// it frees cleanly. The hardened 16-byte class reports 8 (its second word
// is the canary), so requests of 9..16 bytes take the 32-byte class.
TEST(HeapAbuse, BlocksFilledToTheirUsableSizeFreeCleanly) {
    for (size_t size = 1; size <= 48; size++) {
        void *p = hc_malloc(size);
        ASSERT_NE(p, nullptr);
        size_t usable = hc_usable_size(p);
        EXPECT_GE(usable, size);
        if (size <= 8) {
            EXPECT_EQ(usable, HC_HARDENED ? 8u : 16u) << size;
        } else if (size <= 16) {
            EXPECT_EQ(usable, HC_HARDENED ? 32u : 16u) << size;
        }
        memset(p, 0xff, usable);
        void *same = hc_realloc(p, usable); // stays where it is: the canary is checked
        EXPECT_EQ(same, p);
        hc_free(same);
    }
}

// mimalloc-bench's zero_on_malloc at 8 bytes: blocks filled, freed, and
// allocated again. The hardened hand-out clears the link word (a live block
// carries no encoded link, from which the key could be learnt), so an 8-byte
// block comes back all zeros; the default build hands out its plain link.
TEST(HeapAbuse, HandedOutBlocksCarryNoLink) {
    constexpr int kBlocks = 64;
    uint64_t *p[kBlocks];
    for (int i = 0; i < kBlocks; i++) {
        p[i] = (uint64_t *)hc_malloc(8);
        ASSERT_NE(p[i], nullptr);
        *p[i] = ~(uint64_t)0;
    }
    for (int i = 0; i < kBlocks; i++) hc_free(p[i]);
    int nonzero = 0;
    for (int i = 0; i < kBlocks; i++) {
        p[i] = (uint64_t *)hc_malloc(8);
        nonzero += *(volatile uint64_t *)p[i] != 0;
    }
    if (HC_HARDENED)
        EXPECT_EQ(nonzero, 0);
    else
        EXPECT_GT(nonzero, 0) << "the default build leaves the link in a block it hands out";
    for (int i = 0; i < kBlocks; i++) hc_free(p[i]);
}

#if HC_HARDENED
// The canary has no zero byte, whatever the random word it comes from, so
// an overflow by a string's terminator always changes it; nonzero bytes
// are kept as drawn.
TEST(HeapAbuse, CanaryHasNoZeroByte) {
    for (uintptr_t drawn : {(uintptr_t)0, (uintptr_t)0x00ff00ff00ff00ffu, (uintptr_t)0xff00000000000001u}) {
        uintptr_t canary = harden_canary_of(drawn);
        for (unsigned shift = 0; shift < 64; shift += 8) {
            EXPECT_NE((canary >> shift) & 0xff, 0u) << std::hex << drawn << " byte " << shift / 8;
            if ((drawn >> shift) & 0xff) {
                EXPECT_EQ((canary >> shift) & 0xff, (drawn >> shift) & 0xff);
            }
        }
    }
    uintptr_t live = harden_canary_of(hc_harden_hand_out_words[1]);
    EXPECT_EQ(live, hc_harden_hand_out_words[1]) << "the canary in use is one harden_canary_of made";
}
#endif

// ---- Guarded blocks (common/harden_guard.h) ------------------------------------------

// A fault in the child: killed by SIGSEGV (SIGBUS), or, under
// ThreadSanitizer, whose own handler reports the SEGV and exits with its
// exit code (66) instead.
bool FaultedOnAccess(int status) {
    if (WIFSIGNALED(status))
        return WTERMSIG(status) == SIGSEGV || WTERMSIG(status) == SIGBUS;
    return HC_TSAN && WIFEXITED(status) && WEXITSTATUS(status) == 66;
}

// Touches p[offset] as the security programs do (a read-modify-write).
void Touch(volatile char *p, ptrdiff_t offset) {
    p[offset] ^= 'A';
    _exit(0);
}

// A write just past the block, just before it, or a megabyte below it
// faults: 4 KiB (a page), 256 KiB (the largest class), and a size that is
// no page multiple (its end still meets the page after it).
TEST(HeapAbuseDeathTest, GuardedBlocksFaultOnEitherSide) {
    for (size_t size : {HARDEN_GUARD_MIN_SIZE, (size_t)256 << 10, (size_t)10000}) {
        char *p = static_cast<char *>(hc_malloc(size));
        ASSERT_NE(p, nullptr);
        EXPECT_EXIT(Touch(p, (ptrdiff_t)size), FaultedOnAccess, "") << size;
        EXPECT_EXIT(Touch(p, -(1 << 20)), FaultedOnAccess, "") << size;
        if (size % 4096 == 0) {
            EXPECT_EXIT(Touch(p, -1), FaultedOnAccess, "") << size;
        }
        memset(p, 'A', size); /* every byte it was given is its own */
        EXPECT_EQ(hc_usable_size(p), size);
        hc_free(p);
    }
}

// Whether every mapping that overlaps [from, to) is no-access.
bool NoAccessBetween(uintptr_t from, uintptr_t to) {
    FILE *maps = fopen("/proc/self/maps", "r");
    if (maps == nullptr) return false;
    bool none = true;
    char line[512];
    while (fgets(line, sizeof line, maps) != nullptr) {
        unsigned long start, end;
        char perms[5];
        if (sscanf(line, "%lx-%lx %4s", &start, &end, perms) == 3 && start < to && end > from)
            none = none && strcmp(perms, "---p") == 0;
    }
    fclose(maps);
    return none;
}

// A megabyte below a guarded block is its own no-access gap: a write there
// faults, and nothing readable or writable is mapped anywhere in it.
TEST(HeapAbuseDeathTest, GuardedBlocksFaultAMegabyteBelow) {
    char *p = static_cast<char *>(hc_malloc(256 << 10));
    ASSERT_NE(p, nullptr);
    constexpr ptrdiff_t kMegabyte = 1 << 20; /* the security programs' figure */
    void *below[8];
    for (void *&b : below) b = hc_malloc(256 << 10); /* the kernel maps them nearby */
    EXPECT_EXIT(Touch(p, -kMegabyte), FaultedOnAccess, "");
    EXPECT_TRUE(NoAccessBetween((uintptr_t)p - kMegabyte, (uintptr_t)p & ~(uintptr_t)4095));
    for (void *b : below) hc_free(b);
    hc_free(p);
}

// A freed guarded block over HARDEN_GUARD_KEEP_BYTES is no-access (a read
// or write after free faults), the next blocks get other addresses, and
// every block is handed out zeroed, fresh or on a reused mapping.
TEST(HeapAbuseDeathTest, FreedGuardedBlocksAreNoAccessAndNotReused) {
    constexpr size_t kSize = 256 << 10;
    static_assert(kSize > HARDEN_GUARD_KEEP_BYTES, "a block whose memory is dropped at free");
    char *old = static_cast<char *>(hc_malloc(kSize));
    ASSERT_NE(old, nullptr);
    memset(old, 'A', kSize);
    hc_free(old);
    EXPECT_EXIT(Touch(old, 0), FaultedOnAccess, "");
    static char *blocks[2][HARDEN_GUARD_QUARANTINE];
    for (auto &round : blocks) {
        for (char *&p : round) {
            p = static_cast<char *>(hc_malloc(kSize));
            ASSERT_NE(p, nullptr);
            if (&round == &blocks[0]) { /* the second round may reuse old: 256 frees later */
                EXPECT_NE(p, old);
            }
            ASSERT_EQ(p[0] | p[kSize / 2] | p[kSize - 1], 0);
        }
        for (char *p : round) {
            memset(p, 'A', kSize);
            hc_free(p);
        }
    }
}

// The pages of [p, p + bytes) the kernel holds in memory (mincore: any
// mapping, no-access ones too); p is page-aligned.
size_t ResidentPages(const void *p, size_t bytes) {
    static unsigned char vec[(1 << 20) / 4096];
    size_t pages = bytes / 4096, resident = 0;
    if (pages > sizeof vec || mincore(const_cast<void *>(p), bytes, vec) != 0) return SIZE_MAX;
    for (size_t i = 0; i < pages; i++) resident += vec[i] & 1;
    return resident;
}

// A freed block over HARDEN_GUARD_KEEP_BYTES keeps its pages, no-access,
// while the held ones stay within HARDEN_GUARD_HOLD_BYTES: the malloc that
// reuses its mapping hands them out zeroed, where a block past the budget
// has its memory dropped at free.
TEST(HeapAbuse, FreedBigGuardedBlocksHoldTheirPagesWithinABudget) {
    constexpr size_t kSize = 256 << 10, kPages = kSize / 4096;
    static_assert(kSize > HARDEN_GUARD_KEEP_BYTES, "a block made no-access at free");
    harden_guarded_drain(); /* no block of an earlier test holds the budget */
    char *p = static_cast<char *>(hc_malloc(kSize));
    ASSERT_NE(p, nullptr);
    memset(p, 'A', kSize);
    hc_free(p);
    EXPECT_EQ(ResidentPages(p, kSize), kPages) << "the freed block's pages were dropped";
    for (int i = 0; i < HARDEN_GUARD_QUARANTINE; i++) /* p's mapping leaves the quarantine */
        hc_free(hc_malloc(HARDEN_GUARD_MIN_SIZE));
    char *q = static_cast<char *>(hc_malloc(kSize));
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q, p) << "the held mapping was not reused";
    size_t nonzero = 0;
    for (size_t i = 0; i < kSize; i++) nonzero += q[i] != 0;
    EXPECT_EQ(nonzero, 0u) << "a reused block kept its old bytes";
    hc_free(q);
    constexpr size_t kOverBudget = HARDEN_GUARD_HOLD_BYTES / kSize + 2;
    static_assert(kOverBudget < HARDEN_GUARD_QUARANTINE, "all of them still in the quarantine");
    static char *blocks[kOverBudget];
    for (char *&b : blocks) {
        ASSERT_NE(b = static_cast<char *>(hc_malloc(kSize)), nullptr);
        memset(b, 'A', kSize);
    }
    for (char *b : blocks) hc_free(b);
    EXPECT_EQ(ResidentPages(blocks[kOverBudget - 1], kSize), 0u) << "held past the budget";
    harden_guarded_drain();
}

// A kept block (HARDEN_GUARD_KEEP_BYTES or less) reads as zeros after
// free, and a write after free stops the program when it leaves the
// quarantine; the next blocks get other addresses, zeroed, though their
// mappings are reused without a system call.
void WriteAfterFreeOfAKeptBlock() {
    char *old = static_cast<char *>(hc_malloc(HARDEN_GUARD_MIN_SIZE));
    memset(old, 'A', HARDEN_GUARD_MIN_SIZE);
    hc_free(old);
    if (old[0] != 0 || old[HARDEN_GUARD_MIN_SIZE - 1] != 0)
        _exit(1);
    old[100] = 'B';
    for (int i = 0; i < HARDEN_GUARD_QUARANTINE; i++) {
        char *p = static_cast<char *>(hc_malloc(HARDEN_GUARD_MIN_SIZE));
        if (p == old || p[0] != 0 || p[HARDEN_GUARD_MIN_SIZE - 1] != 0)
            _exit(2);
        memset(p, 'A', HARDEN_GUARD_MIN_SIZE);
        hc_free(p);
    }
    _exit(0);
}

// Free clears a kept block line by line, only the 64-byte lines that are
// not zero (harden_guard.c): a byte written anywhere in any line, in any of
// its eight words, reads as zero after free, and the block's mapping comes
// back zero to the next malloc of its size.
TEST(HeapAbuse, FreedKeptGuardedBlocksReadZeroWhereverWritten) {
    constexpr size_t kSize = 3 * HARDEN_GUARD_MIN_SIZE;
    static_assert(kSize <= HARDEN_GUARD_KEEP_BYTES, "a block kept mapped at free");
    char *p = static_cast<char *>(hc_malloc(kSize));
    ASSERT_NE(p, nullptr);
    for (size_t line = 0; line < kSize / 64; line += 1 + line % 3) /* some lines left untouched */
        p[line * 64 + line % 64] = 'A';
    p[kSize - 1] = 'A';
    hc_free(p);
    size_t nonzero = 0;
    for (size_t i = 0; i < kSize; i++) nonzero += p[i] != 0;
    EXPECT_EQ(nonzero, 0u) << "bytes a program wrote survive its free";
    bool reused = false; /* p's mapping leaves the quarantine, a spare for the next block */
    for (int i = 0; i < 2 * HARDEN_GUARD_QUARANTINE; i++) {
        char *q = static_cast<char *>(hc_malloc(kSize));
        ASSERT_NE(q, nullptr);
        reused = reused || q == p;
        for (size_t j = 0; j < kSize; j++) ASSERT_EQ(q[j], 0) << j;
        q[kSize / 2] = 'B';
        hc_free(q);
    }
    EXPECT_TRUE(reused) << "p's mapping never came back: the test saw no spare";
}

// The spares keep kept blocks' pages, readable and zero, for the next
// malloc of their length, up to HARDEN_GUARD_SPARE_KEPT_BYTES of them: a
// spare past the budget is unmapped as it leaves the quarantine, so a
// burst of frees of many blocks of 64 KiB does not stay resident.
TEST(HeapAbuse, SparesKeepKeptPagesWithinABudget) {
    constexpr size_t kSize = HARDEN_GUARD_KEEP_BYTES, kPages = kSize / 4096;
    constexpr size_t kFitting = HARDEN_GUARD_SPARE_KEPT_BYTES / kSize;
    constexpr size_t kBlocks = HARDEN_GUARD_QUARANTINE + kFitting + 8;
    static_assert(kFitting + 8 < HARDEN_GUARD_SPARES, "the budget binds before the count does");
    harden_guarded_drain(); /* no spare of an earlier test holds the budget */
    static char *blocks[kBlocks];
    for (char *&b : blocks) {
        ASSERT_NE(b = static_cast<char *>(hc_malloc(kSize)), nullptr);
        memset(b, 'A', kSize);
    }
    for (char *b : blocks) hc_free(b); /* the first kFitting + 8 leave the quarantine */
    EXPECT_EQ(ResidentPages(blocks[0], kSize), kPages) << "the first spare was not kept";
    EXPECT_EQ(ResidentPages(blocks[kFitting - 1], kSize), kPages) << "a spare within the budget";
    EXPECT_EQ(ResidentPages(blocks[kFitting + 4], kSize), SIZE_MAX) << "a spare past the budget is mapped";
    harden_guarded_drain();
}

// Past HARDEN_GUARD_MAX_MAPPINGS guarded mappings a malloc gets an
// unguarded block, and never NULL: the process's memory areas
// (vm.max_map_count) stay enough for the heap to map the spans that serve
// those blocks.
TEST(HeapAbuse, GuardedMappingsStopAtTheirLimitAndMallocGoesOn) {
    harden_guarded_drain(); /* no freed mapping of an earlier test counts */
    constexpr size_t kPast = 64;
    static void *blocks[HARDEN_GUARD_MAX_MAPPINGS + kPast];
    size_t n = 0, guarded = 0;
    while (n < HARDEN_GUARD_MAX_MAPPINGS + kPast) {
        void *p = hc_malloc(HARDEN_GUARD_MIN_SIZE);
        ASSERT_NE(p, nullptr) << "after " << n << " blocks";
        blocks[n++] = p;
        if (harden_guarded_size(p) != 0)
            guarded++;
    }
    EXPECT_LE(guarded, static_cast<size_t>(HARDEN_GUARD_MAX_MAPPINGS));
    EXPECT_GT(guarded, HARDEN_GUARD_MAX_MAPPINGS - kPast) << "blocks of earlier tests are few";
    EXPECT_EQ(harden_guarded_size(blocks[n - 1]), 0u) << "the limit let a mapping past it";
    // Unguarded blocks, written and freed, come back zero from calloc (a
    // guarded one comes zero by itself; these are reused heap blocks).
    for (size_t i = n - kPast; i < n; i++) memset(blocks[i], 'A', HARDEN_GUARD_MIN_SIZE);
    for (size_t i = n - kPast; i < n; i++) hc_free(blocks[i]);
    for (size_t i = n - kPast; i < n; i++) {
        char *q = static_cast<char *>(hc_calloc(1, HARDEN_GUARD_MIN_SIZE));
        ASSERT_NE(q, nullptr);
        ASSERT_EQ(harden_guarded_size(q), 0u) << "a mapping past the limit";
        size_t nonzero = 0;
        for (size_t j = 0; j < HARDEN_GUARD_MIN_SIZE; j++) nonzero += q[j] != 0;
        EXPECT_EQ(nonzero, 0u) << "calloc handed out a dirty unguarded block";
        blocks[i] = q;
    }
    for (size_t i = 0; i < n; i++) hc_free(blocks[i]);
    harden_guarded_drain();
    void *again = hc_malloc(HARDEN_GUARD_MIN_SIZE); /* the limit's room is back */
    EXPECT_NE(harden_guarded_size(again), 0u);
    hc_free(again);
}

// A fork from a signal handler that interrupted its own thread inside a
// leaf lock's section (harden_guard.h): the fork's lock call must see that
// this thread holds it, not wait for itself, and both sides must go on with
// the section and the lock. Each side runs in a child with an alarm, so a
// wait for itself ends as a failure, not as a hung test.
static int exits_cleanly_within_seconds(void (*body)(), unsigned seconds) {
    pid_t pid = fork();
    if (pid == 0) {
        alarm(seconds);
        body();
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static harden_leaf_lock_t test_leaf = HARDEN_LEAF_LOCK_INITIALIZER;

static void fork_inside_held_section() {
    harden_leaf_lock(&test_leaf); /* the interrupted section */
    int held_before = harden_leaf_fork_lock(&test_leaf);
    if (held_before != 1)
        _exit(2);
    pid_t child = fork();
    harden_leaf_fork_unlock(&test_leaf, held_before, child == 0);
    harden_leaf_unlock(&test_leaf); /* the section ends, on both sides */
    harden_leaf_lock(&test_leaf); /* and the lock works again */
    harden_leaf_unlock(&test_leaf);
    if (child == 0)
        _exit(0);
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        _exit(3);
}

static void fork_while_another_thread_holds() {
    harden_leaf_lock(&test_leaf);
    std::thread forker([] {
        int held_before = harden_leaf_fork_lock(&test_leaf); /* waits for main */
        if (held_before != 0)
            _exit(4);
        harden_leaf_fork_unlock(&test_leaf, held_before, 0);
    });
    usleep(20000);
    harden_leaf_unlock(&test_leaf);
    forker.join();
    harden_leaf_lock(&test_leaf);
    harden_leaf_unlock(&test_leaf);
}

TEST(HeapAbuse, AForkInsideItsOwnLeafLockSectionDoesNotWaitForItself) {
    EXPECT_TRUE(exits_cleanly_within_seconds(fork_inside_held_section, 5));
    EXPECT_TRUE(exits_cleanly_within_seconds(fork_while_another_thread_holds, 5));
}

// A signal handler that interrupted this thread inside the guarded table's
// section calls malloc and free, itself and in the child of a fork it makes:
// neither may wait for the section (it never ends while the handler runs).
// The malloc gets an unguarded block, the free of a guarded block leaves it.
// The table grows (a mapping under its lock) when half of it is taken, and
// the map observer raises the signal there; an alarm turns a wait for
// itself into a failure. A threadsafe death test runs in a fresh process,
// whose table starts at its first size.
static void *guarded_freed_in_handler;
static volatile sig_atomic_t raised_inside_the_table;

static void malloc_and_free_in_handler(int) {
    void *p = hc_malloc(8000); /* a guarded size */
    if (p == nullptr)
        _exit(4);
    memset(p, 1, 8000);
    pid_t child = fork();
    if (child == 0) {
        void *q = hc_malloc(8000);
        _exit(q == nullptr ? 5 : 0);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        _exit(6);
    hc_free(p);
    hc_free(guarded_freed_in_handler);
}

static void raise_once(size_t) {
    if (!raised_inside_the_table) {
        raised_inside_the_table = 1;
        raise(SIGUSR1);
    }
}

static void ReenterFromAHandlerInsideTheTablesSection() {
    alarm(5);
    /* 8,000 bytes: exactly its usable size when guarded (its class's is 8 KiB) */
    guarded_freed_in_handler = hc_malloc(8000); /* the table's first mapping */
    if (guarded_freed_in_handler == nullptr || hc_usable_size(guarded_freed_in_handler) != 8000)
        _exit(7);
    signal(SIGUSR1, malloc_and_free_in_handler);
    os_set_map_observer(raise_once);
    std::vector<void *> blocks;
    for (int i = 0; i < 4096 && !raised_inside_the_table; i++) /* until the table grows */
        blocks.push_back(hc_malloc(8000));
    os_set_map_observer(nullptr);
    if (!raised_inside_the_table)
        _exit(8);
    void *after = hc_malloc(8000); /* the section and its lock go on */
    if (hc_usable_size(after) != 8000)
        _exit(9);
    blocks.push_back(after);
    for (void *b : blocks)
        hc_free(b);
    fprintf(stderr, "went on\n");
    exit(0);
}

TEST(HeapAbuseDeathTest, MallocAndFreeFromAHandlerInsideTheTablesSectionGoOn) {
    if (HC_TSAN)
        GTEST_SKIP() << "ThreadSanitizer reports the handler's malloc as a signal-unsafe call and exits "
                        "before the allocator is reached: the case is the unsafe call itself";
    const std::string style = GTEST_FLAG_GET(death_test_style);
    GTEST_FLAG_SET(death_test_style, "threadsafe"); /* a fresh process: no table yet */
    EXPECT_EXIT(ReenterFromAHandlerInsideTheTablesSection(), ::testing::ExitedWithCode(0), "went on");
    GTEST_FLAG_SET(death_test_style, style); /* the other death tests as they were */
}

TEST(HeapAbuseDeathTest, WriteAfterFreeOfAKeptGuardedBlockStops) {
    EXPECT_EXIT(WriteAfterFreeOfAKeptBlock(), KilledBySignal(SIGABRT),
                "^hcmalloc: free\\(\\): write after free detected in 0x[0-9a-f]+ \\(a freed guarded block "
                "changed in the quarantine\\)\n$");
}

// free, realloc and sized free know a guarded block by its start only: an
// interior pointer and a second free stop with the message.
TEST(HeapAbuseDeathTest, GuardedBlockFreesAreExact) {
    constexpr const char *kInvalid = "^hcmalloc: (free|realloc)\\(\\): invalid pointer 0x[0-9a-f]+\n$";
    char *p = static_cast<char *>(hc_calloc(1, 5000));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p[0] | p[4999], 0);
    EXPECT_EXIT(hc_free(p + 16), KilledBySignal(SIGABRT), kInvalid);
    EXPECT_EXIT(hc_realloc(p + 16, 6000), KilledBySignal(SIGABRT), kInvalid);
    strcpy(p, "kept");
    char *q = static_cast<char *>(hc_realloc(p, 20000)); /* moves: p's addresses fault now */
    ASSERT_NE(q, nullptr);
    EXPECT_STREQ(q, "kept");
    EXPECT_EXIT(hc_free(p), KilledBySignal(SIGABRT), kInvalid);
    hc_free_sized(q, 20000);
    EXPECT_EXIT(hc_free(q), KilledBySignal(SIGABRT), kInvalid);
}

// The kilobytes of huge pages backing the mapping that holds p
// (/proc/self/smaps' AnonHugePages), or -1 when it cannot be read.
long HugeKilobytesAt(const void *p) {
    FILE *smaps = fopen("/proc/self/smaps", "r");
    if (smaps == nullptr) return -1;
    long huge = -1;
    bool in_it = false;
    char line[512];
    while (fgets(line, sizeof line, smaps) != nullptr) {
        unsigned long start, end, kb;
        if (sscanf(line, "%lx-%lx ", &start, &end) == 2 && strchr(line, '-') < strchr(line, ' '))
            in_it = start <= (uintptr_t)p && (uintptr_t)p < end;
        else if (in_it && sscanf(line, "AnonHugePages: %lu kB", &kb) == 1)
            huge = (long)kb;
    }
    fclose(smaps);
    return huge;
}

// A guarded block of HARDEN_GUARD_HUGE_BYTES or more, written whole, sits
// on huge pages: a fault per 2 MiB, not per page (harden_guard.c).
TEST(HeapAbuse, BigGuardedBlocksGetHugePages) {
    char mode[128] = "";
    FILE *thp = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (thp != nullptr) {
        if (fgets(mode, sizeof mode, thp) == nullptr) mode[0] = 0;
        fclose(thp);
    }
    if (strstr(mode, "[never]") != nullptr || mode[0] == 0)
        GTEST_SKIP() << "the kernel gives no transparent huge pages here: " << mode;
    constexpr size_t kSize = 8 << 20;
    static_assert(kSize >= 2 * HARDEN_GUARD_HUGE_BYTES, "room for an aligned huge page");
    char *p = static_cast<char *>(hc_malloc(kSize));
    ASSERT_NE(p, nullptr);
    memset(p, 'A', kSize);
    EXPECT_GT(HugeKilobytesAt(p + kSize / 2), 0) << "no huge pages under the block";
    hc_free(p);
}

// The process's mappings (lines of /proc/self/maps), or -1.
int MappingCount() {
    FILE *maps = fopen("/proc/self/maps", "r");
    if (maps == nullptr) return -1;
    int lines = 0;
    for (int c; (c = fgetc(maps)) != EOF;) lines += c == '\n';
    fclose(maps);
    return lines;
}

// Blocks freed past the quarantine leave their mappings as spares, and the
// next blocks of the same length take them: no new mapping each.
TEST(HeapAbuse, GuardedBlocksReuseSpareMappings) {
    constexpr size_t kSize = 8 << 10;
    constexpr int kSpares = HARDEN_GUARD_SPARES / 2, kTaken = HARDEN_GUARD_SPARES / 4;
    static void *blocks[HARDEN_GUARD_QUARANTINE + kSpares];
    for (void *&p : blocks) ASSERT_NE(p = hc_malloc(kSize), nullptr);
    for (void *p : blocks) hc_free(p); /* kSpares of them leave the quarantine */
    int before = MappingCount();
    for (int i = 0; i < kTaken; i++) ASSERT_NE(blocks[i] = hc_malloc(kSize), nullptr);
    EXPECT_LT(MappingCount() - before, kTaken / 4) << "a fresh mapping per block";
    for (int i = 0; i < kTaken; i++) hc_free(blocks[i]);
}

// aligned_alloc's class-sized requests stay aligned, though right-aligned.
TEST(HeapAbuse, GuardedBlocksKeepAlignedAllocsAligned) {
    for (size_t align : {64, 4096, 8192}) {
        void *p = hc_aligned_alloc(align, align == 64 ? 4160 : 3 * align); /* guarded sizes */
        ASSERT_NE(p, nullptr);
        EXPECT_EQ((uintptr_t)p % align, 0u) << align;
        hc_free(p);
    }
}

// What a program may count on from any malloc, guarded blocks included
// (glibc's tst-realloc asks the same): a realloc that fits the usable size
// keeps the block, and the stats see it.
TEST(HeapAbuse, GuardedBlocksBehaveAsAnyBlock) {
    hc_stats before, during;
    hc_get_stats(&before);
    void *p = hc_malloc(100000);
    ASSERT_NE(p, nullptr);
    hc_get_stats(&during);
    EXPECT_GE(during.bytes_in_use, before.bytes_in_use + 100000) << "a guarded block is in use";
    EXPECT_GE(during.os_mapped_bytes, during.bytes_in_use);
    size_t usable = hc_usable_size(p);
    EXPECT_EQ(hc_realloc(p, usable), p) << "realloc to the usable size moved the block";
    hc_free(p);
}

// Freed guarded blocks hold address space (the quarantine, the spares): an
// out-of-memory retry gives it back, so what was freed can be had again.
TEST(HeapAbuse, FreedGuardedBlocksGiveTheirAddressSpaceBack) {
    for (int i = 0; i < 8; i++)
        hc_free(hc_malloc(200000));
    EXPECT_GT(harden_guarded_drain(), 0u) << "the quarantine held nothing";
    EXPECT_EQ(harden_guarded_drain(), 0u) << "a second drain found more";
}
#endif

}  // namespace
