/* tests/check.h — CHECK for the C test programs that cannot use googletest
 * (their own main: preloaded drop-in checks, fork from a signal handler).
 * A failed check prints "FAIL file:line: condition: message" and counts
 * in `failures`; the program ends non-zero when any failed. */
#ifndef HC_TESTS_CHECK_H_
#define HC_TESTS_CHECK_H_

#include <stdio.h>

static int failures;

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                   \
            fprintf(stderr, "\n");                                          \
            failures++;                                                     \
        }                                                                   \
    } while (0)

#endif /* HC_TESTS_CHECK_H_ */
