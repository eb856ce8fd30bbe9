// tests/stats_util.h — what tests and measuring programs read of an
// allocator (its stats, the process's resident memory and page faults), and
// the short-lived-thread workload that stage 4's thread-exit test and its
// churn program share. The API header only: each binary links the stage it
// measures.
#ifndef HC_TESTS_STATS_UTIL_H_
#define HC_TESTS_STATS_UTIL_H_

#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include <utility>
#include <vector>

extern "C" {
#include "common/hcmalloc.h"
}

namespace hc_test {

inline hc_stats Stats() {
    hc_stats s;
    hc_get_stats(&s);
    return s;
}

// Resident bytes of the whole process, from /proc/self/statm (read with
// read(2): no allocation between two figures).
inline size_t ResidentBytes() {
    char buf[128] = {0};
    int fd = open("/proc/self/statm", O_RDONLY);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    unsigned long size = 0, resident = 0;
    if (n > 0) sscanf(buf, "%lu %lu", &size, &resident);
    return resident * (size_t)sysconf(_SC_PAGESIZE);
}

inline long MinorFaults() {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

// One short-lived thread's work: 200 objects of 8..2007 bytes, all freed (so
// they sit in the thread's cache when it exits).
inline void ShortLivedThread(unsigned seed) {
    std::vector<std::pair<void *, size_t>> got;
    got.reserve(200);
    for (int i = 0; i < 200; i++) {
        size_t size = 8 + (seed * 7919u + i * 104729u) % 2000;
        got.emplace_back(hc_malloc(size), size);
    }
    for (auto &[p, size] : got) hc_free_sized(p, size);
}

}  // namespace hc_test

#endif  // HC_TESTS_STATS_UTIL_H_
