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
 *                                 (NULL: nothing)
 *   track_free(p, size)           block p returned by the program (NULL: nothing)
 *   track_resize(p, slot, size)   block p, in a slot of `slot` bytes, now holds
 *                                 `size` bytes, contents kept (realloc in place)
 *   track_internal_begin(p, n)    the allocator is about to read/write n bytes
 *                                 of memory the program may not touch (a free
 *                                 object's free-list link), or gives it back
 *                                 to the OS
 *   track_internal_end(p, n)      ... and is done with them: the program may
 *                                 not touch them now (also: fresh memory the
 *                                 allocator will carve into objects later)
 *
 * Every block starts 8-byte aligned and its slot is a whole number of 8-byte
 * words (size classes are multiples of 8), which is what ASan's 8-byte
 * shadow granules need.
 *
 * Flavours, chosen at compile time:
 *   HC_TRACK_VALGRIND=1  memcheck client requests (the valgrind test flavour,
 *                        tests/flavours.bzl). They cost a few instructions even
 *                        outside valgrind, so the plain build leaves them out.
 *   AddressSanitizer     (-fsanitize=address: --config=asan, the asan test
 *                        flavour, tools/measure/fuzz.sh) poisons free memory.
 *   otherwise            nothing. */
#ifndef HC_TRACK_H_
#define HC_TRACK_H_

#include <stddef.h>
#include <stdint.h>

#include "common/compiler.h"

#ifndef HC_TRACK_VALGRIND
#define HC_TRACK_VALGRIND 0
#endif

/* gcc says __SANITIZE_ADDRESS__; clang says __has_feature(address_sanitizer). */
#if defined(__SANITIZE_ADDRESS__)
#define HC_TRACK_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HC_TRACK_ASAN 1
#endif
#endif
#ifndef HC_TRACK_ASAN
#define HC_TRACK_ASAN 0
#endif

#if HC_TRACK_VALGRIND && HC_TRACK_ASAN
#error "valgrind cannot run an AddressSanitizer build: pick one checker"
#endif

#if HC_TRACK_VALGRIND
/* ---- Valgrind memcheck ------------------------------------------------------
 * A block is malloc-like from hand-out to free, so memcheck names it in its
 * reports and finds it leaked; between the two it is unaddressable, so any
 * touch is an invalid read or write. The allocator's own touches of a free
 * block (its link word) are bracketed: defined while it works, unaddressable
 * again after. No redzones: slots are packed, so an overflow is caught when
 * it lands in a free slot or in a slot's unused tail. */
#include <valgrind/memcheck.h>
#include <valgrind/valgrind.h>

HC_INLINE void track_alloc(void *p, size_t size, int zeroed) {
    VALGRIND_MALLOCLIKE_BLOCK(p, size, 0, zeroed);
}
HC_INLINE void track_free(void *p, size_t size) {
    (void)size;
    VALGRIND_FREELIKE_BLOCK(p, 0); /* ignored for NULL */
}
/* memcheck's own resize request wants the exact size the block was announced
 * with, which an unsized realloc does not know: the block is announced anew,
 * its bytes defined (a grown tail's garbage then goes unreported). */
HC_INLINE void track_resize(void *p, size_t slot, size_t size) {
    (void)slot;
    VALGRIND_FREELIKE_BLOCK(p, 0);
    VALGRIND_MALLOCLIKE_BLOCK(p, size, 0, 1);
}
HC_INLINE void track_internal_begin(void *p, size_t n) { VALGRIND_MAKE_MEM_DEFINED(p, n); }
HC_INLINE void track_internal_end(void *p, size_t n) { VALGRIND_MAKE_MEM_NOACCESS(p, n); }

#elif HC_TRACK_ASAN
/* ---- AddressSanitizer -------------------------------------------------------
 * Poisoned bytes are everything the program does not own: free and cached
 * objects, the unused tail of a slot, memory not yet carved. A touch is then
 * reported as use-after-poison. Poisoning rounds up to the 8-byte granule,
 * which stays inside the slot. */
#include <sanitizer/asan_interface.h>

HC_INLINE size_t track_granules(size_t n) { return (n + 7) & ~(size_t)7; }

HC_INLINE void track_alloc(void *p, size_t size, int zeroed) {
    (void)zeroed;
    if (p != NULL) ASAN_UNPOISON_MEMORY_REGION(p, size);
}
HC_INLINE void track_free(void *p, size_t size) {
    if (p != NULL) ASAN_POISON_MEMORY_REGION(p, track_granules(size));
}
HC_INLINE void track_resize(void *p, size_t slot, size_t size) {
    ASAN_POISON_MEMORY_REGION(p, track_granules(slot));
    ASAN_UNPOISON_MEMORY_REGION(p, size);
}
HC_INLINE void track_internal_begin(void *p, size_t n) { ASAN_UNPOISON_MEMORY_REGION(p, n); }
HC_INLINE void track_internal_end(void *p, size_t n) { ASAN_POISON_MEMORY_REGION(p, n); }

#else
/* ---- No checker: nothing at all ----------------------------------------------- */
HC_INLINE void track_alloc(void *p, size_t size, int zeroed) { (void)p; (void)size; (void)zeroed; }
HC_INLINE void track_free(void *p, size_t size) { (void)p; (void)size; }
HC_INLINE void track_resize(void *p, size_t slot, size_t size) { (void)p; (void)slot; (void)size; }
HC_INLINE void track_internal_begin(void *p, size_t n) { (void)p; (void)n; }
HC_INLINE void track_internal_end(void *p, size_t n) { (void)p; (void)n; }
#endif

#endif /* HC_TRACK_H_ */
