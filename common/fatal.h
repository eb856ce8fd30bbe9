/* common/fatal.h — stopping the program on bad input, the way glibc does.
 *
 * One line on stderr, then abort(). Written with write(2), not stdio: stdio
 * may allocate, and an allocator reporting corruption must not re-enter
 * itself. */
#ifndef HC_FATAL_H_
#define HC_FATAL_H_


/* Prints "hcmalloc: <what> 0x<addr>" and aborts. */
__attribute__((noreturn, cold)) void hc_fatal_pointer(const char *what, const void *addr);

/* Why an object in a returned batch may be invalid (central cache). */
#define HC_CORRUPT_LIST_WHY                                                              \
    "returned from a thread cache: a free list corrupted by a double free or a write " \
    "after free, a wrong size given to free_sized, or (in the allocator) a chain of n " \
    "objects walked past its n-th"

/* The same, followed by " (<why>)": what the allocator can tell of the cause. */
__attribute__((noreturn, cold)) void hc_fatal_pointer_why(const char *what, const void *addr,
                                                          const char *why);

/* Prints "hcmalloc: <message>" and aborts. */
__attribute__((noreturn, cold)) void hc_fatal(const char *message);

/* Writes "hcmalloc: <message>" + newline to stderr, and carries on. */
void hc_warn(const char *message);

#endif /* HC_FATAL_H_ */
