/* common/fatal.h — stopping the program on bad input, the way glibc does.
 *
 * One line on stderr, then abort(). Written with write(2), not stdio: stdio
 * may allocate, and an allocator reporting corruption must not re-enter
 * itself. */
#ifndef HC_FATAL_H_
#define HC_FATAL_H_

/* Prints "hcmalloc: <what> 0x<addr>" and aborts. */
__attribute__((noreturn, cold)) void hc_fatal_pointer(const char *what, const void *addr);

/* Prints "hcmalloc: <message>" and aborts. */
__attribute__((noreturn, cold)) void hc_fatal(const char *message);

/* Writes "hcmalloc: <message>" + newline to stderr, and carries on. */
void hc_warn(const char *message);

#endif /* HC_FATAL_H_ */
