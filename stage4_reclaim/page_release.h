/* stage4_reclaim/page_release.h — what layer 4 adds to the page cache's
 * interface (stage4_reclaim/page_cache.c): giving free pages back to the OS,
 * and the locks the fork handlers take. The release policy over time needs
 * no call: every page-cache call applies it (see page_cache.c). */
#ifndef HC_PAGE_RELEASE_H_
#define HC_PAGE_RELEASE_H_

#include "common/namespace.h" /* internal names get their hci_ spelling */

#include <stddef.h>

/* Releases every backed free span (madvise MADV_DONTNEED, address range
 * kept). Returns the bytes released by this call. */
size_t pc_release_all(void);

/* madvise calls made so far (by the release policy and pc_release_all). */
size_t pc_release_calls(void);

/* The page cache lock and the span-record pool's lock, in that order (the
 * page cache takes the pool's lock under its own, never the reverse). */
void pc_fork_lock(void);
void pc_fork_unlock(void);

#endif /* HC_PAGE_RELEASE_H_ */
