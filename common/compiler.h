/* common/compiler.h — small portable spellings used by every layer. */
#ifndef HC_COMPILER_H_
#define HC_COMPILER_H_

#define HC_LIKELY(x)   __builtin_expect(!!(x), 1)
#define HC_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define HC_NOINLINE    __attribute__((noinline))
#define HC_INLINE      static inline __attribute__((always_inline))
#define HC_UNUSED      __attribute__((unused))
#define HC_CACHE_LINE  64
#define HC_CACHE_ALIGNED __attribute__((aligned(HC_CACHE_LINE)))

/* Initial-exec TLS: one %fs-relative load, no __tls_get_addr call, and so no
 * allocation when a thread first touches it (what lets stage 4 be malloc). */
#define HC_THREAD_LOCAL __thread __attribute__((tls_model("initial-exec")))

/* Public symbols keep default visibility in the drop-in shared library. */
#define HC_EXPORT __attribute__((visibility("default")))

/* Debug-only checks: compiled out unless --config=debug (HC_DEBUG=1). */
#ifndef HC_DEBUG
#define HC_DEBUG 0
#endif

#endif /* HC_COMPILER_H_ */
