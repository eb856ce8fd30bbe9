/* common/pool.c — the fixed-size metadata pool. */
#include "common/pool.h"

#include <stdatomic.h>
#include <string.h>

#include "common/os.h"

/* Records are carved from chunks this big: a few OS pages, so a pool of
 * small records maps rarely, and a pool of big ones still fits several. */
#define POOL_CHUNK_BYTES (64 * 1024)

static atomic_size_t pool_mapped;

void *pool_alloc(hc_pool *pool) {
    void *record;
    hc_lock_acquire(&pool->lock);
    if (pool->free_records != NULL) {
        record = pool->free_records;
        pool->free_records = *(void **)record;
        hc_lock_unlock(&pool->lock);
        memset(record, 0, pool->record_size);
        return record;
    }
    if ((size_t)(pool->end - pool->cursor) < pool->record_size) {
        size_t chunk = POOL_CHUNK_BYTES;
        while (chunk < pool->record_size) chunk *= 2;
        char *fresh = os_map(chunk); /* the tail of the old chunk is dropped: < one record */
        if (fresh == NULL) {
            hc_lock_unlock(&pool->lock);
            return NULL;
        }
        atomic_fetch_add(&pool_mapped, chunk);
        pool->cursor = fresh;
        pool->end = fresh + chunk;
    }
    record = pool->cursor; /* fresh from mmap: already zero */
    pool->cursor += pool->record_size;
    hc_lock_unlock(&pool->lock);
    return record;
}

void pool_free(hc_pool *pool, void *record) {
    hc_lock_acquire(&pool->lock);
    *(void **)record = pool->free_records;
    pool->free_records = record;
    hc_lock_unlock(&pool->lock);
}

size_t pool_mapped_bytes(void) { return atomic_load(&pool_mapped); }

void pool_account_metadata(size_t bytes) { atomic_fetch_add(&pool_mapped, bytes); }
