// tests/page_cache_check.h — whether the page cache's invariants hold
// (stage 3 and later: pc_check() walks every free span). Shared by stage 3's
// page cache tests and stage 4's release test, which link different
// page_cache.c files.
#ifndef HC_TESTS_PAGE_CACHE_CHECK_H_
#define HC_TESTS_PAGE_CACHE_CHECK_H_

#include <gtest/gtest.h>

extern "C" {
#include "stage3_pagecache/page_cache.h"
}

// The message says which invariant broke.
#define EXPECT_PAGE_CACHE_CONSISTENT()        \
    do {                                      \
        const char *broken = pc_check();      \
        EXPECT_EQ(broken, nullptr) << broken; \
    } while (0)

#endif  // HC_TESTS_PAGE_CACHE_CHECK_H_
