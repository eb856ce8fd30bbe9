// common/lock_test.cc — the lock watchdog (common/lock.h): a lock taken twice
// by one thread stops the program with a line naming the lock and both
// places, instead of hanging until Bazel's timeout. And the spinning lock:
// tried a bounded number of times before its waiter sleeps.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

extern "C" {
#include "common/lock.h"
}

namespace {

hc_lock test_lock = HC_LOCK_INITIALIZER;

TEST(LockWatchdog, IsOnInTestBuilds) { EXPECT_EQ(HC_LOCK_WATCHDOG, 1) << "tests build without NDEBUG"; }

TEST(LockWatchdog, ALockTakenTwiceIsReportedWithBothPlaces) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            hc_lock_acquire(&test_lock);
            hc_lock_acquire(&test_lock);  // waits for itself
        },
        "hcmalloc: lock watchdog: waited 10 s for &test_lock \\(0x[0-9a-f]+\\) at "
        "common/lock_test.cc:[0-9]+, held since common/lock_test.cc:[0-9]+");
}

TEST(LockWatchdog, AnOrdinaryLockAndUnlockSaysNothing) {
    hc_lock lock;
    hc_lock_init(&lock);
    for (int i = 0; i < 1000; i++) {
        hc_lock_acquire(&lock);
        hc_lock_unlock(&lock);
    }
}

TEST(LockWatchdog, ATryTakesAFreeLockAndRefusesAHeldOne) {
    hc_lock lock;
    hc_lock_init(&lock);
    ASSERT_EQ(hc_lock_try(&lock), 1) << "a free lock is taken";
    int taken_elsewhere = -1;
    std::thread([&] { taken_elsewhere = hc_lock_try(&lock); }).join();
    EXPECT_EQ(taken_elsewhere, 0) << "a lock another thread holds is refused, not waited for";
    hc_lock_unlock(&lock);
    std::thread([&] {
        taken_elsewhere = hc_lock_try(&lock);
        if (taken_elsewhere) hc_lock_unlock(&lock);
    }).join();
    EXPECT_EQ(taken_elsewhere, 1) << "unlocked by hc_lock_unlock, it is free again";
}

TEST(LockWatchdog, ALockTakenByATryNamesThatPlaceWhenSomeoneWaitsForIt) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    setenv("HC_LOCK_WATCHDOG_SECONDS", "1", 1);  // the default's wait is the test above's
    EXPECT_DEATH(
        {
            if (hc_lock_try(&test_lock)) hc_lock_acquire(&test_lock);  // waits for itself
        },
        "waited 1 s for &test_lock \\(0x[0-9a-f]+\\) at common/lock_test.cc:[0-9]+, held since "
        "common/lock_test.cc:[0-9]+ ");
    unsetenv("HC_LOCK_WATCHDOG_SECONDS");
}

TEST(LockWatchdog, TheEnvironmentSetsItsSeconds) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");  // the child starts afresh and reads it
    setenv("HC_LOCK_WATCHDOG_SECONDS", "1", 1);
    EXPECT_DEATH(
        {
            hc_lock_acquire(&test_lock);
            hc_lock_acquire(&test_lock);
        },
        "hcmalloc: lock watchdog: waited 1 s for &test_lock");
    unsetenv("HC_LOCK_WATCHDOG_SECONDS");
}

TEST(SpinningLock, ATryTakesAFreeLock) {
    hc_lock lock;
    hc_lock_init(&lock);
    ASSERT_EQ(hc_lock_try_spinning(&lock), 1) << "a free lock is taken by the first try";
    int taken_elsewhere = -1;
    std::thread([&] { taken_elsewhere = hc_lock_try(&lock); }).join();
    EXPECT_EQ(taken_elsewhere, 0) << "and held";
    hc_lock_unlock(&lock);
}

TEST(SpinningLock, TheTriesRunOutWhileAnotherThreadHoldsTheLock) {
    hc_lock lock;
    hc_lock_init(&lock);
    std::atomic<bool> held{false}, done{false};
    std::thread holder([&] {
        hc_lock_acquire(&lock);
        held = true;
        while (!done) std::this_thread::yield();
        hc_lock_unlock(&lock);
    });
    while (!held) std::this_thread::yield();
    EXPECT_EQ(hc_lock_try_spinning(&lock), 0) << "bounded: the caller sleeps then, it does not spin on";
    done = true;
    holder.join();
}

// A waiter that outlasts its tries sleeps, and gets the lock when the
// holder lets go; every increment is made under the lock.
TEST(SpinningLock, WaitersThatOutlastTheirTriesStillExcludeEachOther) {
    hc_lock lock;
    hc_lock_init(&lock);
    long count = 0;
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; t++)
        threads.emplace_back([&] {
            for (int i = 0; i < 20000; i++) {
                hc_lock_acquire_spinning(&lock);
                long seen = count;
                if (i % 5000 == 0) usleep(2000);  // a hold far longer than the tries
                count = seen + 1;
                hc_lock_unlock(&lock);
            }
        });
    for (std::thread &t : threads) t.join();
    EXPECT_EQ(count, 4 * 20000);
}

}  // namespace
