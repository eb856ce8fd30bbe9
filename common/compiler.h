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

/* Static TLS: no __tls_get_addr call, and so no allocation when a thread
 * first touches it (what lets stage 4 be malloc). In a shared library (the
 * drop-in: -fPIC, not -fPIE) initial-exec, a GOT load then the %fs-relative
 * one; linked into the program, local-exec, one %fs-relative load. */
#if defined(__PIC__) && !defined(__PIE__)
#define HC_THREAD_LOCAL __thread __attribute__((tls_model("initial-exec")))
#else
#define HC_THREAD_LOCAL __thread __attribute__((tls_model("local-exec")))
#endif

/* A macro's value as a string literal: HC_STRINGIFY(__LINE__) is "42". */
#define HC_STRINGIFY_(x) #x
#define HC_STRINGIFY(x) HC_STRINGIFY_(x)

/* HC_TSAN: 1 when compiled under ThreadSanitizer (GCC says so with
 * __SANITIZE_THREAD__, Clang with __has_feature), for the code TSan cannot
 * see into (inline asm) or that fails under it. The TSan flavours also pass
 * -DHC_TSAN=1 (tests/flavours.bzl). */
#ifndef HC_TSAN
#if defined(__SANITIZE_THREAD__)
#define HC_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HC_TSAN 1
#endif
#endif
#endif
#ifndef HC_TSAN
#define HC_TSAN 0
#endif

/* A pause between two tries of a busy lock: tells the core it is spinning
 * (x86's pause, Arm's yield), so the sibling hyperthread runs and the try
 * loop does not flood the lock's line with requests. */
#if defined(__x86_64__) || defined(__i386__)
#define HC_CPU_RELAX() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define HC_CPU_RELAX() __asm__ __volatile__("yield")
#else
#define HC_CPU_RELAX() ((void)0)
#endif

/* Public symbols keep default visibility in the drop-in shared library. */
#define HC_EXPORT __attribute__((visibility("default")))

/* Debug-only checks: compiled out unless --config=debug (HC_DEBUG=1). */
#ifndef HC_DEBUG
#define HC_DEBUG 0
#endif

#endif /* HC_COMPILER_H_ */
