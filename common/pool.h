/* common/pool.h — fixed-size metadata records, carved from OS pages.
 *
 * Thread caches, spans and page-map nodes are allocated here, never with
 * malloc: an allocator that called malloc for its own records could never
 * become the process's malloc. A pool hands out records of one size; freed
 * records go on an intrusive list and are reused. Pool memory is never
 * returned to the OS (it is small and long-lived), and it is counted as
 * metadata in hc_get_stats. */
#ifndef HC_POOL_H_
#define HC_POOL_H_


#include <stddef.h>

#include "common/lock.h"

typedef struct hc_pool {
    hc_lock lock;
    size_t record_size;
    void *free_records; /* intrusive list of returned records */
    char *cursor;       /* unused part of the newest chunk */
    char *end;
} hc_pool;

/* A pool for records of `record_size` bytes (rounded up to 16), usable as a
 * static initializer so a pool needs no init call. */
#define HC_POOL_INITIALIZER(record_size) \
    { HC_LOCK_INITIALIZER, ((record_size) + 15) & ~(size_t)15, NULL, NULL, NULL }

/* A zeroed record, or NULL with errno = ENOMEM. Thread-safe. */
void *pool_alloc(hc_pool *pool);

/* Returns a record to its pool. Thread-safe. */
void pool_free(hc_pool *pool, void *record);

/* Bytes all pools have mapped from the OS (for hc_stats.metadata_bytes). */
size_t pool_mapped_bytes(void);

/* Lets a caller count other metadata it maps itself (the page map's nodes). */
void pool_account_metadata(size_t bytes);

#endif /* HC_POOL_H_ */
