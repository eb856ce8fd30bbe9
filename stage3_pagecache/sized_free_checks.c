/* stage3_pagecache/sized_free_checks.c — layer 3: the hardened drop-in's
 * checked sized frees (common/harden.h): C++ sized delete, C23 free_sized
 * and their aligned forms check the size they are given against the
 * block's class before hc_free takes it. Only the hardened build has them;
 * the default one frees by address (or trusts the size: hc_free_sized).
 * Apart from malloc.c, which keeps to the API's paths.
 * May touch: the page map (read), the guarded table (read), hc_free. */
#include <stddef.h>
#include <stdint.h>

#include "common/fatal.h"
#include "common/harden.h"
#include "common/harden_guard.h"
#include "common/hcmalloc.h"
#include "common/size_class.h"
#include "stage3_pagecache/page_map.h"

#if HC_HARDENED
void harden_sized_free(void *ptr, size_t size, const char *wrong_size) {
    if (ptr != NULL && !harden_is_zero_size(ptr)) {
        /* The page map first: a small block is in no guarded table, whose
         * lock every sized delete took (larson-sized: 3.3x its unsized twin). */
        unsigned cls = pm_class_of(ptr);
        if (cls != 0) {
            if (size - 1 >= HC_MAX_SMALL_SIZE || sc_index(size) != cls)
                hc_fatal_pointer(wrong_size, ptr);
        } else {
            size_t guarded = harden_guarded_size(ptr); /* new's size was its size */
            if (guarded != 0 && (!harden_guards(size) || size > guarded))
                hc_fatal_pointer(wrong_size, ptr);
        }
    }
    hc_free(ptr);
}

void harden_aligned_sized_free(void *ptr, size_t alignment, size_t size, const char *wrong_size) {
    if (ptr == NULL)
        return;
    if (alignment == 0 || (alignment & (alignment - 1)) != 0)
        hc_fatal_pointer(wrong_size, ptr); /* no aligned allocation had this alignment */
    size_t want = size < alignment ? alignment : size;
    if (alignment <= HC_MIN_ALIGN) { /* hc_aligned_alloc took hc_malloc(want) */
        harden_sized_free(ptr, want, wrong_size);
        return;
    }
    unsigned cls = sc_aligned_index(alignment, want);
    if (cls != 0)
        harden_sized_free(ptr, sc_size(cls), wrong_size);
    else
        hc_free(ptr); /* an aligned large span: by address, as harden_sized_free frees large blocks */
}
#endif
