// stage3_pagecache/give_back_test.cc — a thread that gives back a long
// list hands the central cache a trip at a time (cc_return_max): the
// central cache reads every object it is handed, to find its span, and a
// trip is what the thread has just read to cut it off its list, still in
// the core's cache. The test wraps cc_return at link time
// (-Wl,--wrap=cc_return in BUILD): every call from thread_cache.c, another
// object file, reaches __wrap_cc_return below, which notes its size.
#include <gtest/gtest.h>

#include <cstdio>
#include <thread>
#include <vector>

extern "C" {
#include "common/hcmalloc.h"
#include "stage1_threadcache/thread_cache.h"
#include "stage2_centralcache/central_cache.h"

void __real_cc_return(unsigned cls, void *first, void *last, uint32_t n);

// What the thread under test handed back, per class; only that thread
// writes (the others may call cc_return too, and are not counted).
static thread_local bool counting;
static thread_local uint64_t calls[HC_NUM_CLASSES], objects[HC_NUM_CLASSES];
static thread_local uint32_t largest[HC_NUM_CLASSES];

void __wrap_cc_return(unsigned cls, void *first, void *last, uint32_t n) {
    if (counting && cls < HC_NUM_CLASSES) {
        calls[cls]++;
        objects[cls] += n;
        if (n > largest[cls]) largest[cls] = n;
    }
    __real_cc_return(cls, first, last, n);
}
}

namespace {

TEST(GiveBack, ALongListGoesBackATripAtATime) {
    std::thread([] {
        const size_t size = 64;
        const unsigned cls = sc_index(size);
        const uint32_t piece = cc_return_max(cls);
        std::vector<void *> ptrs;
        for (int i = 0; i < 6000; i++) ptrs.push_back(hc_malloc(size));
        for (void *p : ptrs) hc_free_sized(p, size);
        const uint32_t held = fl_length(&tc_current->lists[cls]);
        ASSERT_GE(held, 4 * piece) << "the list holds several trips (its limit grew with the refills)";
        counting = true;
        hc_thread_flush();  // gives the whole list back
        counting = false;
        std::printf("%u objects held, given back in %llu calls of at most %u (a trip: %u)\n", held,
                    (unsigned long long)calls[cls], largest[cls], piece);
        EXPECT_EQ(objects[cls], held) << "every object went back";
        EXPECT_LE(largest[cls], piece) << "no call carried more than a trip";
        EXPECT_GE(calls[cls], (held + piece - 1) / piece) << "so a long list took a call per trip";
    }).join();
}

// The sized API's fast path trusts its caller: a block freed twice with
// more than two trips of frees between sits on the list twice, in a loop
// longer than one cut's own check sees. A long give-back cuts it a trip
// at a time; the cut that comes back round into a part already given back
// finds the list longer than its count (as here, where the flush takes the
// whole count) or ending before it (common/free_list_test.cc), and stops
// the program before that cut reaches the central cache.
TEST(GiveBackDeathTest, AListLoopingBackPastATripStopsALongGiveBack) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            const size_t size = 64;
            std::vector<void *> ptrs;
            for (int i = 0; i < 3000; i++) ptrs.push_back(hc_malloc(size));
            hc_free_sized(ptrs[0], size);
            for (int i = 1; i <= 4 * (int)cc_return_max(sc_index(size)); i++) hc_free_sized(ptrs[i], size);
            hc_free_sized(ptrs[0], size);  // again: the list now loops back to it
            hc_thread_flush();
        },
        "double free");  // the debug and hardened builds stop it at the call
}

}  // namespace
