// stage3_pagecache/page_cache_test_util.h — what the layer's tests ask the
// page cache: its counters, and whether its invariants hold.
#ifndef HC_STAGE3_PAGE_CACHE_TEST_UTIL_H_
#define HC_STAGE3_PAGE_CACHE_TEST_UTIL_H_

#include <gtest/gtest.h>

extern "C" {
#include "stage3_pagecache/page_cache.h"
}
#include "tests/page_cache_check.h"  // EXPECT_PAGE_CACHE_CONSISTENT

inline pc_census Census() {
    pc_census c;
    pc_get_census(&c);
    return c;
}

#endif  // HC_STAGE3_PAGE_CACHE_TEST_UTIL_H_
