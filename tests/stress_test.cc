// tests/stress_test.cc — many threads, random sizes, cross-thread frees.
//
// Every object is filled with a pattern derived from its address and size
// and checked just before it is freed, so an allocator that hands the same
// memory out twice, lets two objects overlap, or scribbles on a live object
// fails here. At the end every object allocated must have been verified.
//
// Knobs (environment): HC_STRESS_THREADS (default 8), HC_STRESS_OPS per
// thread (default 200000), HC_STRESS_SEED.
//
// Two more modes, each a target of every stage (tests/reliability.bzl):
//   HC_STRESS_FAIL_ONE_IN=N   fault injection: while the threads run, each OS
//       mapping fails with probability 1/N (common/os.h). A failed call must
//       return NULL with errno ENOMEM (a failed realloc keeps its block);
//       every object handed out is still verified intact when freed; and once
//       mapping works again, fresh and old threads allocate every size.
//   HC_STRESS_SOAK_SECONDS=S  soak: the threads run for S seconds instead of
//       HC_STRESS_OPS operations, while RSS (/proc/self/statm) and
//       hc_get_stats are sampled four times a second (printed once a second:
//       a third of a 10 s soak's samples is 13, not 3, and its median is not
//       two of the release policy's bursts). RSS minus the bytes in use
//       must not keep growing; asserted on stages that return memory to the
//       OS (HC_FEATURE_RELEASE_TO_OS), printed on the others.
#include <errno.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/stats_util.h"
#include "tests/test_util.h"

extern "C" {
#include "common/hcmalloc.h"
#include "common/os.h"
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
    std::atomic<uint64_t> refused{0};  // NULL/ENOMEM while faults were injected
};

using Clock = std::chrono::steady_clock;

// How this run differs from the plain stress test (see the knobs above).
struct Mode {
    bool faults = false;        // mappings may fail: NULL/ENOMEM is allowed
    bool soak = false;          // run until `deadline`, not for `ops`
    Clock::time_point deadline;
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
            Totals *totals, Mode mode) {
    std::mt19937_64 rng(seed * 1000003 + id);
    const bool can_unsized = hc_test::HasFeature(HC_FEATURE_UNSIZED_FREE);
    const size_t window = 1 + rng() % 2000;
    std::vector<Block> live;
    Mailbox &mine = (*mailboxes)[id];
    Mailbox &next = (*mailboxes)[(id + 1) % nthreads];
    std::vector<Block> inbox;

    for (size_t op = 0; mode.soak || op < ops; op++) {
        if (mode.soak && op % 1024 == 0 && Clock::now() >= mode.deadline) break;
        if (live.size() < window && (live.empty() || rng() % 100 < 55)) {
            size_t size = RandomSize(rng);
            errno = 0;
            void *p = hc_malloc(size);
            if (p == nullptr && mode.faults && errno == ENOMEM) {
                totals->refused++;  // a refused mapping, reported the documented way
            } else if (p == nullptr) {
                ADD_FAILURE() << "hc_malloc(" << size << ") failed, errno " << errno;
                return;
            } else {
                if (reinterpret_cast<uintptr_t>(p) % (size >= 16 ? 16 : 8) != 0)
                    ADD_FAILURE() << "misaligned " << p << " for " << size;
                hc_test::FillPattern(p, size);
                totals->allocated++;
                live.push_back({p, size});
            }
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
                errno = 0;
                void *q = hc_realloc(b.ptr, size);
                if (size == 0) {
                    // realloc(p, 0) frees p and returns NULL, as glibc's does (hcmalloc.h).
                    if (q != nullptr) ADD_FAILURE() << "hc_realloc(p, 0) returned " << q;
                    totals->verified++;
                } else if (q == nullptr && mode.faults && errno == ENOMEM) {
                    // The old block stays the caller's, untouched.
                    totals->refused++;
                    size_t bad_after = hc_test::FindPatternMismatch(b.ptr, b.size);
                    if (bad_after != SIZE_MAX) ADD_FAILURE() << "failed realloc changed the block at " << bad_after;
                    live.push_back(b);
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

// ---- Fault injection: recovery ----------------------------------------------

// Once mapping works again, every size class and a large block can be had,
// written and freed, by the thread that saw the failures and by a new one.
void ExpectEverySizeAllocates(const char *who) {
    for (unsigned cls = 1; cls < HC_NUM_CLASSES; cls++) {
        for (size_t size : {sc_size(cls), HC_MAX_SMALL_SIZE + sc_size(cls)}) {
            errno = 0;
            void *p = hc_malloc(size);
            ASSERT_NE(p, nullptr) << who << ": still failing after mapping recovered, size " << size
                                  << ", errno " << errno;
            hc_test::FillPattern(p, size);
            ASSERT_EQ(hc_test::FindPatternMismatch(p, size), SIZE_MAX) << who;
            hc_free_sized(p, size);
        }
    }
}

// ---- Soak: RSS and stats four times a second ------------------------------------

struct Sample {
    double seconds;
    size_t rss;       // resident bytes, /proc/self/statm
    size_t in_use;    // hc_stats.bytes_in_use
    size_t mapped;    // hc_stats.os_mapped_bytes
    size_t adjusted() const { return rss > in_use ? rss - in_use : 0; }
};


class Sampler {
   public:
    // Samples until `deadline`: later ones would show the workers' wind-down.
    explicit Sampler(Clock::time_point deadline)
        : start_(Clock::now()), deadline_(deadline), thread_([this] { Loop(); }) {}
    ~Sampler() { Stop(); }
    void Stop() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
        }
        wake_.notify_all();
        if (thread_.joinable()) thread_.join();
    }
    const std::vector<Sample> &samples() const { return samples_; }

   private:
    void Loop() {
        std::unique_lock<std::mutex> lock(mutex_);
        unsigned n = 0;
        while (!wake_.wait_for(lock, std::chrono::milliseconds(250), [this] { return stop_; }) &&
               Clock::now() < deadline_) {
            hc_stats stats;
            hc_get_stats(&stats);
            Sample s = {std::chrono::duration<double>(Clock::now() - start_).count(), hc_test::ResidentBytes(),
                        stats.bytes_in_use, stats.os_mapped_bytes};
            samples_.push_back(s);
            if (++n % 4 != 0) continue; /* one line a second */
            printf("soak: %5.1fs rss %7.1f MiB  in use %7.1f MiB  rss - in use %7.1f MiB  mapped %7.1f MiB\n",
                   s.seconds, s.rss / 1048576.0, s.in_use / 1048576.0, s.adjusted() / 1048576.0,
                   s.mapped / 1048576.0);
            fflush(stdout);
        }
    }

    Clock::time_point start_, deadline_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stop_ = false;
    std::vector<Sample> samples_;
    std::thread thread_;
};

size_t MedianAdjusted(const std::vector<Sample> &samples, size_t from, size_t to) {
    std::vector<size_t> v;
    for (size_t i = from; i < to; i++) v.push_back(samples[i].adjusted());
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
}

// "Grows without bound": the first third of the run is warm-up (caches and
// live windows filling); after it, the median of the last third tops the
// median of the middle third by a margin. Medians shrug off a wobble; a
// leak, or a cache that never gives back, climbs the whole time, and the
// longer the soak the further apart the two thirds, so the slower a leak it
// catches.
bool GrowsWithoutBound(const std::vector<Sample> &samples, std::string *why) {
    size_t third = samples.size() / 3;
    size_t middle = MedianAdjusted(samples, third, 2 * third);
    size_t last = MedianAdjusted(samples, 2 * third, samples.size());
    const size_t margin = middle / 4 + ((size_t)16 << 20);
    *why = "rss - in use: median " + std::to_string(middle >> 20) + " MiB in the middle third, " +
           std::to_string(last >> 20) + " MiB in the last, margin " + std::to_string(margin >> 20) + " MiB";
    return last > middle + margin;
}

TEST(Stress, TheSoakGrowthRuleFlagsALeakNotAPlateau) {
    const size_t MiB = 1 << 20;
    std::vector<Sample> leak, plateau;
    const size_t settled[] = {10, 30, 45, 50, 58, 44, 52, 60, 47, 55, 49, 57};  // MiB, wobbling
    for (size_t t = 0; t < 12; t++) {
        leak.push_back({double(t), (20 + 10 * t) * MiB + 5 * MiB, 5 * MiB, 0});  // 10 MiB/s more
        plateau.push_back({double(t), settled[t] * MiB + 5 * MiB, 5 * MiB, 0});
    }
    std::string why;
    EXPECT_TRUE(GrowsWithoutBound(leak, &why)) << why;
    EXPECT_FALSE(GrowsWithoutBound(plateau, &why)) << why;
}

TEST(Stress, ThreadsAllocateVerifyAndFreeAcrossThreads) {
    const int nthreads = static_cast<int>(hc_test::EnvSize("HC_STRESS_THREADS", 8));
    const size_t ops = hc_test::EnvSize("HC_STRESS_OPS", 200000);
    const uint64_t seed = hc_test::EnvSize("HC_STRESS_SEED", 1);
    const unsigned fail_one_in = static_cast<unsigned>(hc_test::EnvSize("HC_STRESS_FAIL_ONE_IN", 0));
    const size_t soak_seconds = hc_test::EnvSize("HC_STRESS_SOAK_SECONDS", 0);
    ASSERT_GE(nthreads, 1);
    Mode mode;
    mode.faults = fail_one_in != 0;
    mode.soak = soak_seconds != 0;
    mode.deadline = Clock::now() + std::chrono::seconds(soak_seconds);
    std::vector<Mailbox> mailboxes(nthreads);
    Totals totals;
    std::vector<std::thread> threads;
    const unsigned long refused_before = os_injected_failures();
    std::unique_ptr<Sampler> sampler;
    if (mode.soak) sampler.reset(new Sampler(mode.deadline));
    if (mode.faults) os_fail_maps_randomly(fail_one_in, static_cast<unsigned>(seed));
    for (int i = 0; i < nthreads; i++)
        threads.emplace_back(Worker, i, nthreads, ops, seed, &mailboxes, &totals, mode);
    for (auto &t : threads) t.join();
    if (mode.faults) os_fail_maps_randomly(0, 0);
    if (sampler) sampler->Stop();
    // Objects still in a mailbox were handed over after their receiver
    // stopped: the main thread frees them, crossing threads once more.
    for (Mailbox &m : mailboxes)
        for (const Block &b : m.blocks) FreeVerified(b, false, &totals);

    if (mode.faults) {
        const unsigned long injected = os_injected_failures() - refused_before;
        EXPECT_GT(injected, 0u) << "no mapping was refused: the run injected no fault";
        ExpectEverySizeAllocates("the main thread");
        std::thread(ExpectEverySizeAllocates, "a new thread").join();
        std::printf("faults: 1 in %u mappings refused: %lu refused, %llu calls returned NULL/ENOMEM, "
                    "all %llu objects handed out verified intact, every size allocates again\n",
                    fail_one_in, injected, (unsigned long long)totals.refused.load(),
                    (unsigned long long)totals.verified.load());
    }
    if (mode.soak) {
        const std::vector<Sample> &samples = sampler->samples();
        std::string why;
        ASSERT_GE(samples.size(), 3u) << "a soak needs HC_STRESS_SOAK_SECONDS >= 4 to judge growth";
        bool grows = GrowsWithoutBound(samples, &why);
        bool asserted = hc_test::HasFeature(HC_FEATURE_RELEASE_TO_OS);
        std::printf("soak: %zu samples, %s: %s (%s)\n", samples.size(), grows ? "grows" : "bounded", why.c_str(),
                    asserted ? "asserted" : ("not asserted: " + hc_test::MissingFeature("release to the OS")).c_str());
        if (asserted) {
            EXPECT_FALSE(grows) << "RSS not in use keeps growing: " << why;
        }
    }

    EXPECT_EQ(totals.corrupt.load(), 0u);
    EXPECT_EQ(totals.verified.load(), totals.allocated.load())
        << "every object allocated is verified and freed exactly once";
    EXPECT_GT(totals.handed_over.load(), 0u);
    std::printf("stress: %d threads x %zu ops on %s: %llu objects, %llu freed by another thread\n",
                nthreads, ops, hc_stage_name(), (unsigned long long)totals.allocated.load(),
                (unsigned long long)totals.handed_over.load());
}

}  // namespace
