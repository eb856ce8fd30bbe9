// tests/stress_test.cc — many threads, random sizes, cross-thread frees.
//
// Every object is filled with a pattern derived from its address and size
// and checked just before it is freed, so an allocator that hands the same
// memory out twice, lets two objects overlap, or scribbles on a live object
// fails here. At the end every object allocated must have been verified.
//
// Knobs (environment): HC_STRESS_THREADS (default 8), HC_STRESS_OPS per
// thread (default 200000), HC_STRESS_SEED.
#include <errno.h>
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "tests/test_util.h"

extern "C" {
#include "common/hcmalloc.h"
#include "common/size_class.h"
}

namespace {

struct Block {
    void *ptr;
    size_t size;
};

// Objects one thread hands to another to free.
struct Mailbox {
    std::mutex mutex;
    std::vector<Block> blocks;
};

struct Totals {
    std::atomic<uint64_t> allocated{0};
    std::atomic<uint64_t> verified{0};
    std::atomic<uint64_t> handed_over{0};
    std::atomic<uint64_t> corrupt{0};
};

// Mostly small (as real programs are), some from every class, a few large.
size_t RandomSize(std::mt19937_64 &rng) {
    unsigned roll = rng() % 1000;
    if (roll < 700) return rng() % 513;                      // 0..512
    if (roll < 940) return 513 + rng() % 3584;               // up to 4 KiB
    if (roll < 995) return sc_size(1 + rng() % (HC_NUM_CLASSES - 1)) - rng() % 8;  // any class
    return HC_MAX_SMALL_SIZE + 1 + rng() % (1 << 20);        // large
}

void FreeVerified(const Block &b, bool unsized, Totals *totals) {
    size_t bad = hc_test::FindPatternMismatch(b.ptr, b.size);
    if (bad != SIZE_MAX) {
        totals->corrupt++;
        ADD_FAILURE() << "object " << b.ptr << " of " << b.size << " bytes corrupt at byte " << bad;
    }
    totals->verified++;
    if (unsized) hc_free(b.ptr);
    else hc_free_sized(b.ptr, b.size);
}

void Worker(int id, int nthreads, size_t ops, uint64_t seed, std::vector<Mailbox> *mailboxes,
            Totals *totals) {
    std::mt19937_64 rng(seed * 1000003 + id);
    const bool can_unsized = hc_test::HasFeature(HC_FEATURE_UNSIZED_FREE);
    const size_t window = 1 + rng() % 2000;
    std::vector<Block> live;
    Mailbox &mine = (*mailboxes)[id];
    Mailbox &next = (*mailboxes)[(id + 1) % nthreads];
    std::vector<Block> inbox;

    for (size_t op = 0; op < ops; op++) {
        if (live.size() < window && (live.empty() || rng() % 100 < 55)) {
            size_t size = RandomSize(rng);
            void *p = hc_malloc(size);
            if (p == nullptr) {
                ADD_FAILURE() << "hc_malloc(" << size << ") failed, errno " << errno;
                return;
            }
            if (reinterpret_cast<uintptr_t>(p) % (size >= 16 ? 16 : 8) != 0)
                ADD_FAILURE() << "misaligned " << p << " for " << size;
            hc_test::FillPattern(p, size);
            totals->allocated++;
            live.push_back({p, size});
        } else {
            size_t victim = rng() % live.size();
            Block b = live[victim];
            live[victim] = live.back();
            live.pop_back();
            unsigned roll = rng() % 100;
            if (roll < 15 && nthreads > 1) {
                std::lock_guard<std::mutex> lock(next.mutex);
                next.blocks.push_back(b);
                totals->handed_over++;
            } else if (roll < 20 && can_unsized) {
                // Resize it: the contents up to the smaller size must survive.
                size_t size = RandomSize(rng);
                size_t keep = size < b.size ? size : b.size;
                size_t bad = hc_test::FindPatternMismatch(b.ptr, b.size);
                if (bad != SIZE_MAX) ADD_FAILURE() << "corrupt before realloc at " << bad;
                std::vector<unsigned char> before(static_cast<unsigned char *>(b.ptr),
                                                  static_cast<unsigned char *>(b.ptr) + keep);
                void *q = hc_realloc(b.ptr, size);
                if (size == 0) {
                    // realloc(p, 0) frees p and returns NULL, as glibc's does (hcmalloc.h).
                    if (q != nullptr) ADD_FAILURE() << "hc_realloc(p, 0) returned " << q;
                    totals->verified++;
                } else if (q == nullptr) {
                    ADD_FAILURE() << "hc_realloc failed";
                    return;
                } else {
                    if (keep && memcmp(q, before.data(), keep) != 0) ADD_FAILURE() << "realloc lost contents";
                    hc_test::FillPattern(q, size);
                    live.push_back({q, size});
                }
            } else {
                FreeVerified(b, can_unsized && roll % 3 == 0, totals);
            }
        }
        if (op % 64 == 0) {
            {
                std::lock_guard<std::mutex> lock(mine.mutex);
                inbox.swap(mine.blocks);
            }
            for (const Block &b : inbox) FreeVerified(b, false, totals);
            inbox.clear();
        }
    }
    for (const Block &b : live) FreeVerified(b, false, totals);
    hc_thread_flush();
}

TEST(Stress, ThreadsAllocateVerifyAndFreeAcrossThreads) {
    const int nthreads = static_cast<int>(hc_test::EnvSize("HC_STRESS_THREADS", 8));
    const size_t ops = hc_test::EnvSize("HC_STRESS_OPS", 200000);
    const uint64_t seed = hc_test::EnvSize("HC_STRESS_SEED", 1);
    ASSERT_GE(nthreads, 1);
    std::vector<Mailbox> mailboxes(nthreads);
    Totals totals;
    std::vector<std::thread> threads;
    for (int i = 0; i < nthreads; i++)
        threads.emplace_back(Worker, i, nthreads, ops, seed, &mailboxes, &totals);
    for (auto &t : threads) t.join();
    // Objects still in a mailbox were handed over after their receiver
    // stopped: the main thread frees them, crossing threads once more.
    for (Mailbox &m : mailboxes)
        for (const Block &b : m.blocks) FreeVerified(b, false, &totals);

    EXPECT_EQ(totals.corrupt.load(), 0u);
    EXPECT_EQ(totals.verified.load(), totals.allocated.load())
        << "every object allocated is verified and freed exactly once";
    EXPECT_GT(totals.handed_over.load(), 0u);
    std::printf("stress: %d threads x %zu ops on %s: %llu objects, %llu freed by another thread\n",
                nthreads, ops, hc_stage_name(), (unsigned long long)totals.allocated.load(),
                (unsigned long long)totals.handed_over.load());
}

}  // namespace
