/* common/lock.h — the allocator's lock.
 *
 * A pthread mutex: it never allocates, ThreadSanitizer and Helgrind
 * understand it, a waiter sleeps in the kernel instead of burning the other
 * core (this project's machine has two), and it can be held across fork()
 * by the atfork handlers of stage 4. Layers take it only off the fast path. */
#ifndef HC_LOCK_H_
#define HC_LOCK_H_

#include <pthread.h>

#include "common/compiler.h"

typedef struct hc_lock {
    pthread_mutex_t mutex;
} hc_lock;

#define HC_LOCK_INITIALIZER { PTHREAD_MUTEX_INITIALIZER }

HC_INLINE void hc_lock_init(hc_lock *lock) { pthread_mutex_init(&lock->mutex, NULL); }
HC_INLINE void hc_lock_acquire(hc_lock *lock) { pthread_mutex_lock(&lock->mutex); }
HC_INLINE void hc_lock_release(hc_lock *lock) { pthread_mutex_unlock(&lock->mutex); }

#endif /* HC_LOCK_H_ */
