// common/pool_test.cc — the metadata pool hands out zeroed, distinct records.
#include <gtest/gtest.h>

#include <set>
#include <thread>
#include <vector>

extern "C" {
#include "common/pool.h"
}

namespace {

struct Record {
    char bytes[40];
};

hc_pool record_pool = HC_POOL_INITIALIZER(sizeof(Record));

TEST(Pool, RecordsAreZeroedDistinctAndReused) {
    size_t mapped_before = pool_mapped_bytes();
    std::set<void *> seen;
    std::vector<Record *> records;
    for (int i = 0; i < 5000; i++) {
        auto *r = static_cast<Record *>(pool_alloc(&record_pool));
        ASSERT_NE(r, nullptr);
        for (char b : r->bytes) ASSERT_EQ(b, 0);
        ASSERT_TRUE(seen.insert(r).second) << "record handed out twice";
        ASSERT_EQ(reinterpret_cast<uintptr_t>(r) % 16, 0u);
        memset(r->bytes, 0xab, sizeof r->bytes);
        records.push_back(r);
    }
    EXPECT_GT(pool_mapped_bytes(), mapped_before);
    for (Record *r : records) pool_free(&record_pool, r);
    size_t mapped = pool_mapped_bytes();
    for (int i = 0; i < 5000; i++) {
        auto *r = static_cast<Record *>(pool_alloc(&record_pool));
        ASSERT_TRUE(seen.count(r)) << "a freed record is reused before mapping more";
        for (char b : r->bytes) ASSERT_EQ(b, 0) << "reused records are zeroed";
    }
    EXPECT_EQ(pool_mapped_bytes(), mapped);
}

TEST(Pool, ThreadsNeverShareARecord) {
    std::vector<std::vector<void *>> got(4);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; t++)
        threads.emplace_back([t, &got] {
            for (int i = 0; i < 2000; i++) got[t].push_back(pool_alloc(&record_pool));
        });
    for (auto &th : threads) th.join();
    std::set<void *> all;
    for (auto &v : got)
        for (void *p : v) EXPECT_TRUE(all.insert(p).second);
}

}  // namespace
