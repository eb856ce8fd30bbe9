// stage4_reclaim/checks/churn_rss.cc — the thread-churn workload, as a program that
// prints RSS and mapped bytes every 100 threads. Built against stage 3 and
// stage 4 (BUILD: churn_rss_stage3, churn_rss_stage4), to compare the RSS
// of the two; it asserts nothing (thread_exit_test is stage 4's test of it).
//   bazel run //stage4_reclaim/checks:churn_rss_stage3 -- 1000
#include <stdlib.h>

#include <cstdio>

#include <thread>
#include <utility>
#include <vector>

#include "tests/stats_util.h"

using hc_test::ResidentBytes;
using hc_test::ShortLivedThread;

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 1000;
    hc_free_sized(hc_malloc(16), 16);
    std::printf("%-20s %8s %12s %12s %14s\n", hc_stage_name(), "threads", "rss_kib", "mapped_kib",
                "thread_cache_kib");
    for (int i = 0; i <= threads; i++) {
        if (i % 100 == 0) {
            hc_stats s;
            hc_get_stats(&s);
            std::printf("%-20s %8d %12zu %12zu %14zu\n", "", i, ResidentBytes() >> 10,
                        s.os_mapped_bytes >> 10, s.thread_cache_bytes >> 10);
        }
        if (i < threads) std::thread(ShortLivedThread, static_cast<unsigned>(i)).join();
    }
    return 0;
}
