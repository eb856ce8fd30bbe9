/* stage4_reclaim/address_space_limit.h — for the tests that run under an
 * address-space limit (RLIMIT_AS, as `ulimit -v` or a container sets it):
 * the limit is set to what the process maps already plus a headroom, so
 * that it bounds the heap, not the set-up. Header-only, test code: stdio
 * may allocate here, before the limit. */
#ifndef HC_STAGE4_ADDRESS_SPACE_LIMIT_H_
#define HC_STAGE4_ADDRESS_SPACE_LIMIT_H_

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

/* The process's mapped address space now, from /proc/self/statm. */
static inline size_t address_space_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (f == NULL || fscanf(f, "%lu", &pages) != 1) {
        fprintf(stderr, "FAIL: cannot read /proc/self/statm\n");
        exit(1);
    }
    fclose(f);
    return pages * (size_t)sysconf(_SC_PAGESIZE);
}

/* RLIMIT_AS = what is mapped now + `headroom` bytes; exits on failure. */
static inline void limit_address_space(size_t headroom) {
    struct rlimit limit = {address_space_bytes() + headroom, RLIM_INFINITY};
    if (setrlimit(RLIMIT_AS, &limit) != 0) {
        perror("FAIL: setrlimit");
        exit(1);
    }
}

#endif /* HC_STAGE4_ADDRESS_SPACE_LIMIT_H_ */
