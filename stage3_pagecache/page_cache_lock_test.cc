// stage3_pagecache/page_cache_lock_test.cc — the page cache's lock is taken
// spinning (page_cache_internal.h): a thread that finds it held tries it
// HC_LOCK_SPINS times before it sleeps, and then tries no more. The test
// wraps pthread_mutex_trylock at link time (-Wl,--wrap in BUILD) and
// counts the tries on pc_lock while it holds the lock itself.
#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <thread>

extern "C" {
#include "common/lock.h"
#include "stage3_pagecache/page_cache.h"
#include "stage3_pagecache/page_cache_internal.h"

int __real_pthread_mutex_trylock(pthread_mutex_t *mutex);

static std::atomic<long> tries_of_pc_lock;

int __wrap_pthread_mutex_trylock(pthread_mutex_t *mutex) {
    if (mutex == &pc_lock.mutex) tries_of_pc_lock++;
    return __real_pthread_mutex_trylock(mutex);
}
}

namespace {

TEST(PageCacheLock, AWaiterTriesItBeforeItSleeps) {
    pc_free_span(pc_alloc_span(1, 0));  // the page cache set up, outside the count
    hc_lock_acquire(&pc_lock);
    tries_of_pc_lock = 0;
    std::thread waiter([] { pc_free_span(pc_alloc_span(1, 0)); });
    for (int ms = 0; ms < 10000 && tries_of_pc_lock < HC_LOCK_SPINS; ms++) usleep(1000);
    usleep(50000);  // long enough for more tries, if it made any: it sleeps now
    long tries = tries_of_pc_lock;
    hc_lock_unlock(&pc_lock);
    waiter.join();
    std::printf("the waiter tried the page cache's lock %ld times before it slept\n", tries);
    EXPECT_GE(tries, HC_LOCK_SPINS) << "a waiter spins before it sleeps";
    // The watchdog's acquire (builds without NDEBUG) tries once more first.
    EXPECT_LE(tries, HC_LOCK_SPINS + 1) << "and then sleeps: the tries are bounded";
}

}  // namespace
