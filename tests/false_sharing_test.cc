// tests/false_sharing_test.cc — the shared suite: two fresh threads' first
// objects of a small class never share a cache line.
//
// If the layer that hands objects to threads cut one thread's object and the
// next thread's from the same 64-byte line, two threads that each reuse one
// block would write one line from two cores: Hoard's active false sharing,
// induced by the allocator (cc_fresh_count in central_cache.h). Each case runs
// in a child process of its own, in which the allocator has handed out
// nothing yet, so both objects come from never-used memory: the rule does
// not promise anything for objects one thread freed and another got back.
// The sizes are requests, not classes (1..8 bytes need not have a class of
// their own); 48, 80 and 112 are classes that are not powers of two.
#include <gtest/gtest.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

extern "C" {
#include "common/compiler.h"
#include "common/hcmalloc.h"
}

namespace {

struct Case {
    size_t size;
    bool together;  // both threads malloc at once, or the second after the first
    pthread_barrier_t start, taken, done;
    void *objects[2];
};

struct Arg {
    Case *c;
    int index;
};

void *FirstObject(void *raw) {
    Arg *arg = static_cast<Arg *>(raw);
    Case *c = arg->c;
    if (c->together || arg->index == 1) pthread_barrier_wait(&c->start);
    c->objects[arg->index] = hc_malloc(c->size);
    if (!c->together && arg->index == 0) pthread_barrier_wait(&c->start);
    // Both objects stay live until both are taken: a thread that exited
    // first could give its object back, and the other one could get it.
    pthread_barrier_wait(&c->taken);
    pthread_barrier_wait(&c->done);
    hc_free_sized(c->objects[arg->index], c->size);
    return nullptr;
}

// In the child: 0 if the two first objects lie on disjoint lines, 1 if
// they share one, 2 if a malloc failed.
int RunChild(size_t size, bool together) {
    Case c = {};
    c.size = size;
    c.together = together;
    pthread_barrier_init(&c.start, nullptr, 2);
    pthread_barrier_init(&c.taken, nullptr, 2);
    pthread_barrier_init(&c.done, nullptr, 2);
    pthread_t threads[2];
    Arg args[2] = {{&c, 0}, {&c, 1}};
    for (int i = 0; i < 2; i++) pthread_create(&threads[i], nullptr, FirstObject, &args[i]);
    for (int i = 0; i < 2; i++) pthread_join(threads[i], nullptr);
    if (c.objects[0] == nullptr || c.objects[1] == nullptr) return 2;
    uintptr_t a = (uintptr_t)c.objects[0], b = (uintptr_t)c.objects[1];
    uintptr_t a_first = a / HC_CACHE_LINE, a_last = (a + size - 1) / HC_CACHE_LINE;
    uintptr_t b_first = b / HC_CACHE_LINE, b_last = (b + size - 1) / HC_CACHE_LINE;
    if (a_last < b_first || b_last < a_first) return 0;
    fprintf(stderr, "%s: malloc(%zu) in two fresh threads (%s): %p and %p share a %d-byte line\n",
            hc_stage_name(), size, together ? "at once" : "one after the other", c.objects[0],
            c.objects[1], HC_CACHE_LINE);
    return 1;
}

class FirstObjects : public ::testing::TestWithParam<size_t> {};

TEST_P(FirstObjects, OfTwoFreshThreadsShareNoCacheLine) {
    for (bool together : {false, true}) {
        fflush(stderr);
        pid_t pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            int code = RunChild(GetParam(), together);
            fflush(stderr);
            _exit(code);
        }
        int status = 0;
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        ASSERT_TRUE(WIFEXITED(status)) << "the child died, status " << status;
        EXPECT_NE(WEXITSTATUS(status), 2) << "malloc(" << GetParam() << ") returned NULL";
        EXPECT_EQ(WEXITSTATUS(status), 0)
            << "malloc(" << GetParam() << "): the first objects of two fresh threads, "
            << (together ? "allocating at once" : "one after the other")
            << ", share a cache line (the child's line above says where)";
    }
}

INSTANTIATE_TEST_SUITE_P(Sizes, FirstObjects, ::testing::Values(8, 16, 32, 48, 80, 112, 208),
                         [](const ::testing::TestParamInfo<size_t> &info) {
                             return std::to_string(info.param) + "_bytes";
                         });

}  // namespace
