// stage4_reclaim/reclaim_test_util.h — what stage 4's tests and the churn
// program measure: the allocator's stats and the process's resident memory.
#ifndef HC_STAGE4_RECLAIM_TEST_UTIL_H_
#define HC_STAGE4_RECLAIM_TEST_UTIL_H_

#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

extern "C" {
#include "common/hcmalloc.h"
}

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

#endif  // HC_STAGE4_RECLAIM_TEST_UTIL_H_
