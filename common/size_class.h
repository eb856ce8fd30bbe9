/* common/size_class.h — request size -> size class, in O(1), shared by every stage.
 *
 * The table (index: object size):
 *   1: 8                 no request maps here (see below); kept so that the
 *                        numbers of the other classes stay those of the docs
 *   2..17: 16, 32, ..., 256      a class every 16 bytes; requests 1..16 use 16
 *                        (1..8 in the hardened build, where 9..16 use 32:
 *                        SC_CANARY_CLASS_MAX_REQUEST below)
 *   18..97: from 257 up to 256 KiB, 8 classes per power of two:
 *           2^k + j * 2^(k-3), j = 1..8, k = 8..17
 *           (288, 320, ..., 512, 576, 640, ..., 1024, 1152, ..., 262144)
 * Every class is a multiple of 16, so every block is 16-byte aligned (as
 * glibc's are) as long as the memory it is carved from is, and every free
 * block has room for two words: its link and its free tag (common/harden.h).
 * Class 1 (8 bytes) served requests 1..8 until the tag needed a second word;
 * the central cache can still carve it (its tests do), malloc never asks.
 *
 * Internal waste: a request r lands in the smallest class c >= r. Above 256 the
 * step is 2^(k-3) for r in (2^k, 2^(k+1)], so c - r < 2^(k-3) < r/8: at most
 * 12.5%, the bound size_class_test checks for every request from 256 up. Below
 * 256 the 16-byte step bounds the waste at 15 bytes.
 *
 * Index 0 is not a class; requests above HC_MAX_SMALL_SIZE are "large" and
 * each stage handles them outside the size classes. */
#ifndef HC_SIZE_CLASS_H_
#define HC_SIZE_CLASS_H_

#include <stddef.h>
#include <stdint.h>

#include "common/compiler.h"

#define HC_PAGE_SHIFT      13                       /* the allocator's page: 8 KiB */
#define HC_PAGE_SIZE       ((size_t)1 << HC_PAGE_SHIFT)
#define HC_MAX_SMALL_SIZE  ((size_t)256 * 1024)     /* largest size class */
#define HC_NUM_CLASSES     98                       /* classes 1..97, 0 unused */
#define HC_MIN_ALIGN       16

/* Bytes moved between a thread cache and a shared tier in one transfer: large
 * enough that a small class rarely takes a lock (32 objects), small enough
 * that a big class does not hoard memory (2 objects of 256 KiB). */
#define HC_BATCH_BYTES     (64 * 1024)
#define HC_MAX_BATCH       32
#define HC_MIN_BATCH       2

#ifndef HC_HARDENED
#define HC_HARDENED 0
#endif

/* Requests of 1..HC_TABLE_MAX_SIZE bytes, the ones programs make most, find
 * their class with one table load: sc_table[(size - 1) / 8]. The table
 * reaches 4 KiB, the operating system's page: programs ask for 1-4 KiB
 * buffers often (a page, a read buffer, a string that doubled), and a size
 * the table covers takes the inline fast path, one above it a call and a
 * computed class (docs/benchmarks.md, section 29). The hardened build gives
 * blocks of 4 KiB and up mappings of their own (common/harden_guard.h), so
 * its table stops a byte short: a guarded size never finds a list. */
#define HC_TABLE_MAX_SIZE (HC_HARDENED ? 4095 : 4096)
extern const uint8_t sc_table[(HC_TABLE_MAX_SIZE + 7) / 8];

/* The largest request the 16-byte class (class 2) serves. The hardened
 * build keeps that class's second word as a canary, checked when the block
 * is freed (common/harden.h), so there the class holds 8 bytes of the
 * program's and 9..16 go to the 32-byte class. */
#define SC_CANARY_CLASS_MAX_REQUEST (HC_HARDENED ? 8 : 16)

/* The class of a request of `s` bytes, 1 <= s <= 4096, as a constant
 * expression (sc_table, and the thread cache's table of list offsets, are
 * built by the compiler, not at run time, so the very first malloc of a
 * process can use them). It spells out sc_index_beyond_table() for k = 8
 * (257..512) up to k = 11 (2049..4096); size_class_test checks that the two
 * agree for every size. */
#define SC_CLASS_OF(s)                                                   \
    ((s) <= SC_CANARY_CLASS_MAX_REQUEST ? 2                              \
     : (s) <= 256  ? (((s) + 15) >> 4) + 1 + ((s) <= 16)                 \
     : (s) <= 512  ? 10 + (((s) - 1) >> 5)                               \
     : (s) <= 1024 ? 18 + (((s) - 1) >> 6)                               \
     : (s) <= 2048 ? 26 + (((s) - 1) >> 7)                               \
                   : 34 + (((s) - 1) >> 8))

/* The class of a request of 1..HC_TABLE_MAX_SIZE bytes: one load. */
HC_INLINE unsigned sc_index_small(size_t size) {
    return sc_table[(size - 1) >> 3];
}

/* The class of a request of HC_TABLE_MAX_SIZE+1..HC_MAX_SMALL_SIZE bytes:
 * a count of leading zeros and a shift. */
HC_INLINE unsigned sc_index_beyond_table(size_t size) {
    /* 2^k < size <= 2^(k+1); the 8 classes of this doubling are 2^(k-3) apart. */
    unsigned k = 63u - (unsigned)__builtin_clzl(size - 1);
    return 17u + (k - 8u) * 8u + (unsigned)((size - 1) >> (k - 3u)) - 7u;
}

/* The class of a request of 1..HC_MAX_SMALL_SIZE bytes, in O(1). */
HC_INLINE unsigned sc_index(size_t size) {
    if (HC_LIKELY(size <= HC_TABLE_MAX_SIZE))
        return sc_index_small(size);
    return sc_index_beyond_table(size);
}

/* Object size of class `cls` (1..HC_NUM_CLASSES-1). */
HC_INLINE size_t sc_size(unsigned cls) {
    if (cls <= 17)
        return cls == 1 ? 8 : (size_t)(cls - 1) * 16;
    unsigned k = 8u + (cls - 18u) / 8u;
    size_t j = (cls - 18u) % 8u + 1u;
    return ((size_t)1 << k) + (j << (k - 3u));
}

/* The class an aligned allocation of `want` bytes (at least `alignment`, a
 * power of two above HC_MIN_ALIGN) takes: objects sit at multiples of their
 * size from a page boundary, so the first class from want's up whose size
 * is a multiple of `alignment` gives aligned objects (every power-of-two
 * class is one, so the search ends by HC_MAX_SMALL_SIZE). 0 where none
 * does: above a page of alignment, or of size, a large span aligned as
 * asked (stage 3's hc_aligned_alloc). Slow path only. */
HC_INLINE unsigned sc_aligned_index(size_t alignment, size_t want) {
    if (alignment > HC_PAGE_SIZE || want > HC_MAX_SMALL_SIZE)
        return 0;
    unsigned cls = sc_index(want);
    while (sc_size(cls) % alignment != 0)
        cls++;
    return cls;
}

/* Objects per transfer for class `cls`: HC_BATCH_BYTES / size, clamped. */
HC_INLINE unsigned sc_batch(unsigned cls) {
    size_t n = HC_BATCH_BYTES / sc_size(cls);
    if (n < HC_MIN_BATCH) n = HC_MIN_BATCH;
    if (n > HC_MAX_BATCH) n = HC_MAX_BATCH;
    return (unsigned)n;
}

/* Pages in a span carved into objects of class `cls`: the fewest whole pages
 * that hold at least one object and leave at most 1/8 of the span as a tail
 * too small for another object. Slow path only (a loop of a few steps). */
size_t sc_span_pages(unsigned cls);

#endif /* HC_SIZE_CLASS_H_ */
