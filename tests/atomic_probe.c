/* tests/atomic_probe.c — the record behind tests/atomic_probe.h. A lock, not
 * atomics: this file is compiled without the probe's macros, and a test's
 * probed stores may come from several threads. */
#define HC_ATOMIC_PROBE_NO_MACROS
#include "tests/atomic_probe.h"

#include <pthread.h>
#include <stddef.h>

#define HC_PROBE_RECORDS 4096

static struct {
    const void *addr;
    int order;
} records[HC_PROBE_RECORDS];
static size_t next_record; /* total noted; the ring keeps the last HC_PROBE_RECORDS */
static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;

void hc_probe_store(const void *addr, int order) {
    pthread_mutex_lock(&probe_lock);
    records[next_record % HC_PROBE_RECORDS].addr = addr;
    records[next_record % HC_PROBE_RECORDS].order = order;
    next_record++;
    pthread_mutex_unlock(&probe_lock);
}

int hc_probe_last_order(const void *addr) {
    int order = -1;
    pthread_mutex_lock(&probe_lock);
    size_t kept = next_record < HC_PROBE_RECORDS ? next_record : HC_PROBE_RECORDS;
    for (size_t i = 1; i <= kept && order < 0; i++)
        if (records[(next_record - i) % HC_PROBE_RECORDS].addr == addr)
            order = records[(next_record - i) % HC_PROBE_RECORDS].order;
    pthread_mutex_unlock(&probe_lock);
    return order;
}

void hc_probe_reset(void) {
    pthread_mutex_lock(&probe_lock);
    next_record = 0;
    pthread_mutex_unlock(&probe_lock);
}
