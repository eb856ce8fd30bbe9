/* common/size_class.c — the class table for small requests, and the one
 * size-class computation that needs a loop. */
#include "common/size_class.h"

/* Entry i serves sizes 8i+1 .. 8i+8, whose class is that of 8i+8. The cast
 * is for clang, which checks every arm of SC_CLASS_OF's conditionals: the
 * arm for sizes up to 256 would not fit a byte at 4096 (it is never taken
 * there), and every class does (at most 97). */
#define SC_ENTRY(i) (uint8_t)SC_CLASS_OF(8 * (i) + 8)
#define SC_ROW(i)                                                     \
    SC_ENTRY(i), SC_ENTRY(i + 1), SC_ENTRY(i + 2), SC_ENTRY(i + 3),   \
    SC_ENTRY(i + 4), SC_ENTRY(i + 5), SC_ENTRY(i + 6), SC_ENTRY(i + 7)

#define SC_ROWS_64(i)                                                 \
    SC_ROW(i), SC_ROW(i + 8), SC_ROW(i + 16), SC_ROW(i + 24),         \
    SC_ROW(i + 32), SC_ROW(i + 40), SC_ROW(i + 48), SC_ROW(i + 56)

const uint8_t sc_table[(HC_TABLE_MAX_SIZE + 7) / 8] = {
    SC_ROWS_64(0),   SC_ROWS_64(64),  SC_ROWS_64(128), SC_ROWS_64(192),
    SC_ROWS_64(256), SC_ROWS_64(320), SC_ROWS_64(384), SC_ROWS_64(448),
};

size_t sc_span_pages(unsigned cls) {
    size_t size = sc_size(cls);
    size_t pages = (size + HC_PAGE_SIZE - 1) >> HC_PAGE_SHIFT;
    while (((pages << HC_PAGE_SHIFT) % size) > ((pages << HC_PAGE_SHIFT) >> 3))
        pages++;
    return pages;
}
