/* stage3_pagecache/page_policy.c — layer 3's release policy
 * (page_policy.h): none. Free pages stay backed, so a heap never shrinks,
 * and its pages are the OS's 4 KiB ones; stage 4 links
 * stage4_reclaim/page_release.c instead.
 * May touch: nothing. */
#include "stage3_pagecache/page_policy.h"

#include <stdint.h>

void pc_policy_init(void) {}
void pc_policy_before_call(void) {}
void pc_policy_after_call(void) {}
/* No heap limit: the OS's mmap alone can refuse. */
int pc_policy_may_grow(size_t pages, int headroom) {
    (void)pages;
    (void)headroom;
    return 1;
}
/* No huge pages: what a program touches is what it has resident. */
size_t pc_policy_huge_heap_bytes(void) { return SIZE_MAX; }
