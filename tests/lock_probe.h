// tests/lock_probe.h — which central-cache bucket locks are held right now,
// for lock-order tests (stage 2 and later). Pair it with os_set_map_observer
// to see the locks held whenever the allocator calls into the kernel.
#ifndef HC_TESTS_LOCK_PROBE_H_
#define HC_TESTS_LOCK_PROBE_H_

#include <pthread.h>

extern "C" {
#include "common/size_class.h"
#include "stage2_centralcache/central_cache.h"
}

namespace hc_test {

// The number of bucket locks that are busy, found by trylock. In a test
// where one thread runs the allocator, a busy lock is held by that thread.
inline int HeldBucketLocks() {
    int held = 0;
    for (unsigned cls = 1; cls < HC_NUM_CLASSES; cls++) {
        pthread_mutex_t *m = &cc_bucket_lock(cls)->mutex;
        if (pthread_mutex_trylock(m) != 0) held++;
        else pthread_mutex_unlock(m);
    }
    return held;
}

}  // namespace hc_test

#endif  // HC_TESTS_LOCK_PROBE_H_
