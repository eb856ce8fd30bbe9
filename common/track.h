/* common/track.h — telling memory checkers what the allocator does.
 *
 * Valgrind and AddressSanitizer know glibc's malloc, not ours: to them a
 * block we hand out is just bytes inside a big mmap. These hooks announce
 * each hand-out and each free so the checkers can report use-after-free,
 * double free, overflow and leaks in programs that use hcmalloc.
 *
 * Every layer calls these and nothing else: no #ifdef for a tool anywhere
 * outside this file. In a normal build they are empty and compile to
 * nothing, so the fast path's instruction count does not change.
 *
 *   track_alloc(p, size, zeroed)  block p of `size` bytes handed to the program
 *   track_free(p, size)           block p returned by the program
 *   track_internal_begin(p, n)    the allocator is about to read/write n bytes
 *                                 of a free block (its free-list link)
 *   track_internal_end(p, n)      ... and is done with them */
#ifndef HC_TRACK_H_
#define HC_TRACK_H_

#include <stddef.h>

#include "common/compiler.h"

HC_INLINE void track_alloc(void *p, size_t size, int zeroed) { (void)p; (void)size; (void)zeroed; }
HC_INLINE void track_free(void *p, size_t size) { (void)p; (void)size; }
HC_INLINE void track_internal_begin(void *p, size_t n) { (void)p; (void)n; }
HC_INLINE void track_internal_end(void *p, size_t n) { (void)p; (void)n; }

#endif /* HC_TRACK_H_ */
