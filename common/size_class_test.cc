// common/size_class_test.cc — the size-class table keeps its promises.
#include <gtest/gtest.h>

extern "C" {
#include "common/size_class.h"
}

namespace {

TEST(SizeClass, EveryRequestGetsTheSmallestClassThatFits) {
    for (size_t size = 1; size <= HC_MAX_SMALL_SIZE; size++) {
        unsigned cls = sc_index(size);
        ASSERT_GE(cls, 2u) << size << ": class 1 (8 B) serves no request (size_class.h)";
        ASSERT_LT(cls, (unsigned)HC_NUM_CLASSES) << size;
        ASSERT_GE(sc_size(cls), size) << "class too small for " << size;
        if (cls > 2) {
            ASSERT_LT(sc_size(cls - 1), size) << "a smaller class fits " << size;
        }
    }
}

TEST(SizeClass, TableAgreesWithTheArithmetic) {
    // sc_index_small reads the table; the arithmetic below is the definition.
    for (size_t size = 1; size <= HC_TABLE_MAX_SIZE; size++) {
        unsigned want;
        if (size <= 256) {
            want = (unsigned)((size + 15) >> 4) + 1;
        } else {
            unsigned k = 63u - (unsigned)__builtin_clzl(size - 1);
            want = 17u + (k - 8u) * 8u + (unsigned)((size - 1) >> (k - 3u)) - 7u;
        }
        ASSERT_EQ(sc_index_small(size), want) << size;
        ASSERT_EQ(sc_index(size), want) << size;
    }
}

TEST(SizeClass, WasteIsAtMostOneEighthFrom256Up) {
    for (size_t size = 256; size <= HC_MAX_SMALL_SIZE; size++) {
        size_t waste = sc_size(sc_index(size)) - size;
        ASSERT_LE(waste * 8, size) << "request " << size << " wastes " << waste;
    }
}

TEST(SizeClass, ClassesAreIncreasingAndAligned) {
    EXPECT_EQ(sc_size(1), 8u) << "kept, unused: the other classes keep their numbers";
    EXPECT_EQ(sc_index(1), 2u) << "the smallest request gets 16 bytes: room for the link and the tag";
    EXPECT_EQ(sc_size(HC_NUM_CLASSES - 1), HC_MAX_SMALL_SIZE);
    for (unsigned cls = 2; cls < HC_NUM_CLASSES; cls++) {
        EXPECT_GT(sc_size(cls), sc_size(cls - 1));
        EXPECT_EQ(sc_size(cls) % 16, 0u) << "class " << cls;
        EXPECT_EQ(sc_index(sc_size(cls)), cls) << "a class size maps to itself";
    }
}

TEST(SizeClass, BatchesAndSpansAreSane) {
    for (unsigned cls = 1; cls < HC_NUM_CLASSES; cls++) {
        unsigned batch = sc_batch(cls);
        EXPECT_GE(batch, (unsigned)HC_MIN_BATCH);
        EXPECT_LE(batch, (unsigned)HC_MAX_BATCH);
        size_t span_bytes = sc_span_pages(cls) * HC_PAGE_SIZE;
        EXPECT_GE(span_bytes, sc_size(cls));
        EXPECT_LE((span_bytes % sc_size(cls)) * 8, span_bytes) << "span tail too big, class " << cls;
    }
    EXPECT_EQ(sc_batch(sc_index(16)), 32u);
    EXPECT_EQ(sc_batch(sc_index(HC_MAX_SMALL_SIZE)), 2u);
}

}  // namespace
