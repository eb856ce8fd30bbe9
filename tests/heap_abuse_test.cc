// tests/heap_abuse_test.cc — the classic heap exploits' first steps (the
// how2heap catalogue, adapted), against the default build and the hardened
// one (common/harden.h). Stage 3 and 4 run it as heap_abuse_test (default)
// and heap_abuse_hardened_test (the same file with HC_HARDENED=1, through
// tests/flavours.bzl). Each mistake runs in a forked child (EXPECT_EXIT), in
// a size class no other test here uses, so the damage stays there.
//
// The hardened build must stop every one with its one-line message before
// a forged pointer is handed out. The default build does what
// docs/design.md, section 6, says it does: a double free stops when its
// list is cut into a batch; a forged link is followed, and the test shows
// where it leads (a harmless buffer of its own).
#include <gtest/gtest.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>

#include <thread>

extern "C" {
#include "common/harden.h"
#include "common/hcmalloc.h"
}

namespace {

using ::testing::ExitedWithCode;
using ::testing::KilledBySignal;

constexpr const char *kCorruptLink = "^hcmalloc: malloc\\(\\): corrupted free list at 0x[0-9a-f]+ \\(.*\\)\n$";
constexpr const char *kDoubleFree = "^hcmalloc: free\\(\\): double free detected of 0x[0-9a-f]+ \\(.*\\)\n$";
// The default build's two slow-path checks, by what each says.
constexpr const char *kDoubleFreeOfTheHead =
    "^hcmalloc: free\\(\\): double free detected of 0x[0-9a-f]+ \\(it is the last block this thread freed\\)\n$";
// A double free on a short list: at the call (the slow path's head check)
// or at the flush (empty by its count, a head left).
constexpr const char *kDoubleFreeCold =
    "^hcmalloc: free\\(\\): double free detected of 0x[0-9a-f]+ \\((it is the last block this thread "
    "freed|a thread's free list holds it more often than its count says)\\)\n$";
constexpr const char *kDoubleFreeInACut =
    "^hcmalloc: free\\(\\): double free detected of 0x[0-9a-f]+ \\(a thread's free list holds it twice\\)\n$";

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

// Cold: the class's first block, freed twice. Default: if the list has
// room for both (slow start may leave it at 1), the list holds it twice,
// linked to itself, and the next two mallocs both return it (the documented
// miss); the list is then empty by its count but still has a head, which the
// flush finds. Otherwise the second free is the slow path's and stops.
void DoubleFreeCold() {
    void *p = hc_malloc(160);
    hc_free(p);
    hc_free(p);
    void *a = hc_malloc(160), *b = hc_malloc(160);
    if (a != p || b != p) _exit(1);
    hc_thread_flush();
    _exit(0);
}

TEST(HeapAbuseDeathTest, DoubleFreeCold) {
    EXPECT_EXIT(DoubleFreeCold(), KilledBySignal(SIGABRT), HC_HARDENED ? kDoubleFree : kDoubleFreeCold);
}

// Warm: the list is long; the second free is the fast path's in both builds.
void DoubleFreeWarm() {
    Warm(192);
    void *p = hc_malloc(192);
    hc_free(p);
    hc_free(p);
    hc_thread_flush();
    _exit(0);
}

TEST(HeapAbuseDeathTest, DoubleFreeWarm) {
    EXPECT_EXIT(DoubleFreeWarm(), KilledBySignal(SIGABRT), kDoubleFree);
}

// The 1000-byte case of issue 20: 16 warm-up pairs, a double free, two
// mallocs that may walk into the cycle, a flush. Where the list is at its
// limit (stage 4) the second free is the slow path's and stops at the call;
// where it has room (stage 3) the flush finds the cycle, where it used to
// crash.
void DoubleFreeAfterWarmUpPairs() {
    for (int i = 0; i < 16; i++) hc_free(hc_malloc(1000));
    void *p = hc_malloc(1000);
    hc_free(p);
    hc_free(p);
    void *a = hc_malloc(1000), *b = hc_malloc(1000);
    (void)a;
    (void)b;
    hc_thread_flush();
    _exit(0);
}

TEST(HeapAbuseDeathTest, DoubleFreeAfterWarmUpPairs) {
    EXPECT_EXIT(DoubleFreeAfterWarmUpPairs(), KilledBySignal(SIGABRT), HC_HARDENED ? kDoubleFree : kDoubleFreeCold);
}

// a; b; a: no object is freed twice in a row, so no head check sees it.
// Default: a cycle a -> b -> a, found when the list is cut.
void DoubleFreeABA() {
    Warm(224);
    void *a = hc_malloc(224), *b = hc_malloc(224);
    hc_free(a);
    hc_free(b);
    hc_free(a);
    hc_thread_flush();
    _exit(0);
}

TEST(HeapAbuseDeathTest, DoubleFreeABA) {
    EXPECT_EXIT(DoubleFreeABA(), KilledBySignal(SIGABRT), HC_HARDENED ? kDoubleFree : kDoubleFreeInACut);
}

// The second free when the list is full goes to the slow path, which sees
// that the block is the list's head: caught at the call in both builds.
void DoubleFreeIntoAFullList() {
    void *p = hc_malloc(2048); // slow start: the list's limit is 2 now
    void *q = hc_malloc(2048);
    hc_free(q);
    hc_free(p);
    hc_free(p); // the list is at its limit: the slow path
    _exit(0);
}

TEST(HeapAbuseDeathTest, DoubleFreeIntoAFullList) {
    EXPECT_EXIT(DoubleFreeIntoAFullList(), KilledBySignal(SIGABRT),
                HC_HARDENED ? kDoubleFree : kDoubleFreeOfTheHead);
}

// Across threads: each thread's list holds the block once. Default: caught
// when the second copy reaches the span, which the first copy has reached
// already (it is the span's last returned object, or the span went back and
// the page map no longer knows the block). Hardened: at the second free.
void DoubleFreeAcrossThreads() {
    void *p = hc_malloc(3000);
    std::thread([p] {
        hc_free(p);
        hc_thread_flush();
    }).join();
    std::thread([p] {
        hc_free(p);
        hc_thread_flush();
    }).join();
    _exit(0);
}

TEST(HeapAbuseDeathTest, DoubleFreeAcrossThreads) {
    EXPECT_EXIT(DoubleFreeAcrossThreads(), KilledBySignal(SIGABRT),
                HC_HARDENED ? kDoubleFree
                            : "^hcmalloc: free\\(\\): (double free detected of|invalid pointer) 0x[0-9a-f]+.*\n$");
}

// ---- A slot never handed out (issue 20, item 2) -------------------------------------

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

}  // namespace
