/* common/size_class.c — the one size-class computation that needs a loop. */
#include "common/size_class.h"

size_t sc_span_pages(unsigned cls) {
    size_t size = sc_size(cls);
    size_t pages = (size + HC_PAGE_SIZE - 1) >> HC_PAGE_SHIFT;
    while (((pages << HC_PAGE_SHIFT) % size) > ((pages << HC_PAGE_SHIFT) >> 3))
        pages++;
    return pages;
}
