// common/free_list_test.cc — intrusive lists: push, pop and ranges.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>

extern "C" {
#include "common/free_list.h"
#include "common/track.h"
}

namespace {

// The lists poison a free block's words for the checkers (common/track.h);
// these tests' blocks are on the stack, which must be handed back unpoisoned
// before the frame is reused (ASan's rule for poisoned stack memory: the
// next frames there may be code built without ASan, googletest's, whose
// reads the stale poison would stop).
class UnpoisonedOnExit {
   public:
    UnpoisonedOnExit(void *p, size_t n) : p_(p), n_(n) {}
    ~UnpoisonedOnExit() { track_internal_begin(p_, n_); }

   private:
    void *p_;
    size_t n_;
};

TEST(FreeList, PushPopIsLastInFirstOut) {
    void *objs[4][2];
    UnpoisonedOnExit unpoison(objs, sizeof objs);
    hc_free_list list = {};
    for (auto &o : objs) fl_push(&list, o);
    EXPECT_EQ(fl_length(&list), 4u);
    for (int i = 3; i >= 0; i--) EXPECT_EQ(fl_pop(&list), objs[i]);
    EXPECT_EQ(fl_pop(&list), nullptr);
    EXPECT_EQ(fl_length(&list), 0u);
    EXPECT_TRUE(fl_empty(&list));
}

// The default build's free tag is stage 3's hc_free's, and stage 3 clears
// it where it hands a block out: fl_pop, which stages 1 and 2 share, leaves
// the block's second word alone (free_list.h, FL_POP_CLEARS_TAG).
TEST(FreeList, PopLeavesTheSecondWordToTheLayerThatTagsIt) {
    ASSERT_EQ(FL_POP_CLEARS_TAG, 0) << "this test is the default build's";
    uintptr_t obj[2] = {0, 0};
    hc_free_list list = {};
    ASSERT_EQ(fl_tag_free(obj), 1);  // as stage 3's hc_free tags it, then pushes it
    fl_push(&list, obj);
    EXPECT_EQ(fl_pop(&list), (void *)obj);
    // The checkers' flavours (common/track.h) keep a free block's words
    // poisoned: the test reads them as the allocator's own code does.
    track_internal_begin(obj, sizeof obj);
    EXPECT_EQ(obj[1], free_tag_value(obj)) << "fl_pop stored into the block's second word";
    track_internal_end(obj, sizeof obj);
    fl_clear_tag(obj);
    track_internal_begin(obj, sizeof obj);
    EXPECT_EQ(obj[1], 0u);  // left unpoisoned: the stack frame is the test's
}

TEST(FreeList, RangesMoveWithTheirLength) {
    void *objs[10][2];
    UnpoisonedOnExit unpoison(objs, sizeof objs);
    hc_free_list list = {};
    for (auto &o : objs) fl_push(&list, o);
    void *first, *last;
    EXPECT_EQ(fl_pop_range(&list, 4, &first, &last), 4u);
    EXPECT_EQ(fl_length(&list), 6u);
    EXPECT_EQ(first, objs[9]);
    EXPECT_EQ(last, objs[6]);
    EXPECT_EQ(fl_next(last), nullptr);

    hc_free_list other = {};
    fl_push_range(&other, first, last, 4);
    EXPECT_EQ(fl_length(&other), 4u);
    EXPECT_EQ(fl_pop(&other), objs[9]);

    // Asking for more than there is takes what there is.
    EXPECT_EQ(fl_pop_range(&list, 100, &first, &last), 6u);
    EXPECT_TRUE(fl_empty(&list));
    EXPECT_EQ(fl_pop_range(&list, 3, &first, &last), 0u);
    EXPECT_EQ(first, nullptr);
    EXPECT_EQ(last, nullptr);
}

// Double frees the fast path let through, found when the list is cut.
// (16-byte aligned objects, two words each: what the hardened link wants.)
struct alignas(16) Obj {
    void *words[2];
};

TEST(FreeListDeathTest, ACutThatEndsInACycleStops) {
    Obj objs[3];
    UnpoisonedOnExit unpoison(objs, sizeof objs);
    Obj &x = objs[0], &a = objs[1], &b = objs[2];
    hc_free_list list = {};
    fl_push(&list, &a);
    fl_push(&list, &b);
    fl_push(&list, &a); // a;b;a: a -> b -> a -> ...
    fl_push(&list, &x);
    void *first, *last;
    EXPECT_DEATH(fl_pop_range(&list, 3, &first, &last),
                 "hcmalloc: free\\(\\): double free detected of 0x[0-9a-f]+ \\(a thread's free list holds it twice\\)");
    EXPECT_DEATH(fl_pop_range(&list, 4, &first, &last), "holds it twice");
}

TEST(FreeListDeathTest, AListEmptyByItsCountButWithAHeadStops) {
    Obj p;
    UnpoisonedOnExit unpoison(&p, sizeof p);
    hc_free_list list = {};
    fl_push(&list, &p);
    fl_push(&list, &p); // p -> p
    EXPECT_EQ(fl_pop(&list), &p);
    EXPECT_EQ(fl_pop(&list), &p); // count 0, head p
    void *first, *last;
    EXPECT_DEATH(fl_pop_range(&list, 0, &first, &last),
                 "hcmalloc: free\\(\\): double free detected of 0x[0-9a-f]+ \\(a thread's free list holds it more often");
}

// x freed, then 600 others, then x again: x -> o600 -> ... -> o1 -> x, a
// cycle of 601, longer than two cuts of 256 (a long give-back's pieces).
// The first cut breaks it (its last link is NULL); the cut that comes back
// round into it must stop the program before it returns any object of the
// first cut a second time. The death test's child gives back 1,000 objects
// in cuts of 256, as tc_give_back does, and exits quietly if one comes out
// twice (then the test fails).
Obj looped[1200];

void GiveBackALoopedListInCuts() {
    hc_free_list list = {};
    for (int i = 601; i < 1200; i++) fl_push(&list, &looped[i]);  // older: unreachable below
    for (int i = 0; i <= 600; i++) fl_push(&list, &looped[i]);
    fl_push(&list, &looped[0]);  // x again
    static bool given[1200];
    for (uint32_t n = 1000; n > 0;) {
        void *first, *last;
        uint32_t taken = fl_pop_range(&list, n < 256 ? n : 256, &first, &last);
        if (taken == 0) break;
        for (void *o = first; o != NULL; o = o == last ? NULL : fl_next(o)) {
            long i = (Obj *)o - looped;
            if (given[i]) {
                fprintf(stderr, "object %ld given back twice\n", i);
                _exit(0);
            }
            given[i] = true;
        }
        n -= taken;
    }
    _exit(0);
}

TEST(FreeListDeathTest, ACutThatLoopsBackIntoAnEarlierCutStops) {
    UnpoisonedOnExit unpoison(looped, sizeof looped);
    EXPECT_DEATH(GiveBackALoopedListInCuts(),
                 "double free detected of 0x[0-9a-f]+ \\(a thread's free list ends before its count says");
}

TEST(FreeList, ACutOfAnHonestListTouchesNothingElse) {
    Obj objs[8];
    UnpoisonedOnExit unpoison(objs, sizeof objs);
    hc_free_list list = {};
    for (auto &o : objs) fl_push(&list, &o);
    void *first, *last;
    EXPECT_EQ(fl_pop_range(&list, 3, &first, &last), 3u);
    EXPECT_EQ(fl_length(&list), 5u);
    EXPECT_EQ(fl_pop_range(&list, 5, &first, &last), 5u);
    EXPECT_TRUE(fl_empty(&list));
}

}  // namespace
