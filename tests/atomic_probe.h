/* tests/atomic_probe.h — records the memory order of every atomic store in
 * one source file, for tests of a publication rule (test builds only).
 *
 * A relaxed store where a store-release is needed passes every functional
 * test, and on x86-64 even ThreadSanitizer cannot see it when the published
 * memory was zeroed by mmap (nothing wrote it before the store). So a test
 * target compiles the file under test with `-include tests/atomic_probe.h`:
 * each __atomic_store_n / __atomic_exchange_n / __atomic_compare_exchange_n
 * of that file first notes (address, order) here, then does what it says.
 * A macro may carry a builtin's name, and is not expanded again inside its
 * own body, so the builtin still runs. Plain assignments leave no record:
 * the test reads a missing record as "not an atomic store".
 * Never in the allocator's libraries: only the probed copy in a test. */
#ifndef HC_TESTS_ATOMIC_PROBE_H_
#define HC_TESTS_ATOMIC_PROBE_H_

#ifdef __cplusplus
extern "C" {
#endif

/* Notes a store of order `order` to `addr` (a fixed ring: the last
 * HC_PROBE_RECORDS stores). */
void hc_probe_store(const void *addr, int order);
/* The order of the last store noted to `addr`, or -1 if none was. */
int hc_probe_last_order(const void *addr);
void hc_probe_reset(void);

#ifdef __cplusplus
}
#endif

#ifndef HC_ATOMIC_PROBE_NO_MACROS
#define __atomic_store_n(p, v, mo) (hc_probe_store((const void *)(p), (mo)), __atomic_store_n((p), (v), (mo)))
#define __atomic_exchange_n(p, v, mo) \
    (hc_probe_store((const void *)(p), (mo)), __atomic_exchange_n((p), (v), (mo)))
#define __atomic_compare_exchange_n(p, e, v, w, mo, fmo) \
    (hc_probe_store((const void *)(p), (mo)), __atomic_compare_exchange_n((p), (e), (v), (w), (mo), (fmo)))
#endif

#endif /* HC_TESTS_ATOMIC_PROBE_H_ */
