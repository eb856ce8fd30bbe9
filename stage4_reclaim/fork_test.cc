// stage4_reclaim/fork_test.cc — fork() while other threads allocate: the
// child finds every allocator lock free, allocates, and exits cleanly.
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

extern "C" {
#include "common/hcmalloc.h"
#include "stage4_reclaim/reclaim.h"
}

namespace {

std::atomic<bool> stop{false};

// Keeps every layer busy: small objects (thread cache, central buckets),
// large ones (page cache), releases (madvise under the page cache lock),
// stats (every lock in turn), and thread exits (registry, record pool).
void Churner(unsigned seed) {
    std::vector<void *> live;
    unsigned x = seed;
    while (!stop.load(std::memory_order_relaxed)) {
        x = x * 1103515245u + 12345u;
        size_t size = (x >> 8) % 4 == 0 ? 20000 + (x >> 12) % 300000 : 8 + (x >> 12) % 3000;
        live.push_back(hc_malloc(size));
        if (live.size() > 64) {
            for (void *p : live) hc_free(p);
            live.clear();
            if ((x >> 20) % 8 == 0) hc_release_free_memory();
            if ((x >> 20) % 8 == 1) {
                hc_stats s;
                hc_get_stats(&s);
            }
            if ((x >> 20) % 8 == 2) std::thread([] { hc_free(hc_malloc(100)); }).join();
        }
    }
    for (void *p : live) hc_free(p);
}

// In the child: only async-signal-safe calls besides the allocator's own.
int ChildWork() {
    alarm(20);  // a lock left held would hang here: SIGALRM turns that into a failure
    void *ptrs[200];
    for (int i = 0; i < 200; i++) {
        size_t size = i % 10 == 0 ? 100000 + i : 16 + i * 7;
        ptrs[i] = hc_malloc(size);
        if (ptrs[i] == nullptr) return 1;
        memset(ptrs[i], i, size < 64 ? size : 64);
    }
    for (void *p : ptrs) hc_free(p);
    hc_release_free_memory();
    hc_stats s;
    hc_get_stats(&s);
    return s.os_mapped_bytes > 0 ? 0 : 2;
}

TEST(Fork, ChildOfABusyMultiThreadedParentAllocatesAndExits) {
    hc_free(hc_malloc(1));  // registers the handlers (first slow-path malloc)
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < 4; t++) threads.emplace_back(Churner, t + 1);
    int failures = 0;
    for (int i = 0; i < 200; i++) {
        pid_t pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) _exit(ChildWork());
        int status = 0;
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            failures++;
            ADD_FAILURE() << "child " << i << ": "
                          << (WIFSIGNALED(status) ? "killed by signal " : "exit status ")
                          << (WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
            if (failures > 3) break;
        }
        // The parent's own locks came back too.
        hc_free(hc_malloc(300000));
    }
    stop = true;
    for (auto &t : threads) t.join();
    EXPECT_EQ(failures, 0);
}

// pthread_atfork runs prepare handlers in the reverse order of registration:
// one registered after hcmalloc's runs before it, while no allocator lock is
// taken, and may allocate anything. One registered before hcmalloc's runs
// after it took every lock: its cache misses then skip the locks the same
// thread holds (common/lock.h, hc_lock_fork_owner) instead of waiting for
// them forever; the next test covers that case.
void *prepare_blocks[3];
void AllocatingPrepare() {
    prepare_blocks[0] = hc_malloc(24);
    prepare_blocks[1] = hc_malloc(200000);  // a span: the page cache's lock
    prepare_blocks[2] = hc_malloc(3000);
}
void FreeingParent() {
    for (void *p : prepare_blocks) hc_free(p);
}

// Forks; the child frees the blocks its prepare handler allocated, does
// ChildWork and exits with its result. Returns that exit code (-1: the fork
// failed or the child did not exit). An alarm turns a deadlock into a
// failure instead of a hang.
template <size_t N>
int ForkFreeingInChild(void *(&blocks)[N]) {
    alarm(60);
    pid_t pid = fork();
    if (pid == 0) {
        for (void *p : blocks) hc_free(p);
        _exit(ChildWork());
    }
    int status = 0;
    bool waited = pid > 0 && waitpid(pid, &status, 0) == pid;
    alarm(0);
    return waited && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(Fork, APrepareHandlerRegisteredAfterHcmallocsMayAllocate) {
    hc_free(hc_malloc(1));  // hcmalloc's handlers are registered by now
    ASSERT_EQ(pthread_atfork(AllocatingPrepare, FreeingParent, nullptr), 0);
    EXPECT_EQ(ForkFreeingInChild(prepare_blocks), 0);
}

// Registered by a constructor that runs before hcmalloc's (a priority runs
// before every constructor without one), so it runs after hcmalloc's
// prepare handler, with every allocator lock taken. Only the test below
// turns it on.
bool early_prepare_allocates = false;
void *early_blocks[4];
void EarlyPrepare() {
    if (!early_prepare_allocates) return;
    // Misses on purpose (the test flushed this thread's cache): refills
    // take bucket locks, the large blocks the page cache's lock.
    early_blocks[0] = hc_malloc(48);
    early_blocks[1] = hc_malloc(40000);
    early_blocks[2] = hc_malloc(300000);
    early_blocks[3] = hc_malloc((size_t)70 << 20);  // mapped directly
}
void EarlyParent() {
    if (!early_prepare_allocates) return;
    for (void *p : early_blocks) hc_free(p);
}
__attribute__((constructor(101))) void RegisterEarlyHandlers() {
    pthread_atfork(EarlyPrepare, EarlyParent, nullptr);
}

TEST(Fork, APrepareHandlerRegisteredBeforeHcmallocsMayAllocate) {
    hc_thread_flush();
    early_prepare_allocates = true;
    int code = ForkFreeingInChild(early_blocks);
    early_prepare_allocates = false;
    for (void *p : early_blocks) EXPECT_NE(p, nullptr);
    EXPECT_EQ(code, 0);
}

TEST(Fork, HandlersCanBeCalledByHandAndUnlockEverything) {
    hc_fork_prepare();
    hc_fork_parent();
    hc_free(hc_malloc(64));
    hc_free(hc_malloc(1 << 20));
}

}  // namespace
