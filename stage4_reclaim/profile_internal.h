/* stage4_reclaim/profile_internal.h — layer 4: what the heap profiler's
 * files share with each other; nothing outside them includes it (the rest
 * of stage 4 sees profile.h). The files, one concern each:
 *   profile_sampler.c  when to sample: the countdown, its random distances
 *                      (libm-free math), the estimates a sample stands for
 *   profile_stack.c    the sampled call stack (libunwind or libgcc)
 *   profile_table.c    the records: stacks and buckets in lock-free-read
 *                      hash tables, the live sampled blocks
 *   profile_maps.c     the kept copy of /proc/self/maps
 *   profile_writer.c   the pprof text profile: on demand, per interval, at exit
 *   profile_leak.c     the leak report at exit
 *   profile.c          start, exit and fork wiring, the counters
 * The build without the profiler links profile_absent.c instead of all these.
 * May touch: nothing; declarations only. */
#ifndef HC_PROFILE_INTERNAL_H_
#define HC_PROFILE_INTERNAL_H_

#include <stddef.h>
#include <stdint.h>

#include "common/compiler.h"
#include "common/fd_out.h"
#include "common/lock.h"
#include "stage4_reclaim/profile.h"

/* ---- profile_sampler.c ---------------------------------------------------------- */

/* T, the mean bytes between samples, as the sampler last read it (0: off;
 * 1: every allocation, exact). */
size_t profile_sample_bytes(void);
/* Reads T from the options again, and returns it. */
size_t profile_read_sample_bytes(void);
/* 1 / p(size): how many allocations of `size` bytes one sample stands for. */
double profile_weight(size_t size);
/* Interval profiles from now on, one per `interval_bytes` allocated. */
void profile_arm_intervals(uint64_t interval_bytes);

/* ---- profile_stack.c ------------------------------------------------------------ */

typedef struct stack_walk {
    uintptr_t pcs[HC_PROFILE_MAX_DEPTH];
    int depth;
    int in_caller; /* past this library's frames */
} stack_walk;

/* The caller's stack, this library's frames skipped. */
void profile_take_stack(stack_walk *w);
/* At load: finds this library's code and primes both unwinders. */
void profile_prime_unwinders(void);

/* ---- profile_table.c ------------------------------------------------------------ */

/* A distinct call stack. Its buckets (one per size) hang from it, so that a
 * dump writes the stack's text once for all its lines. */
typedef struct stack_record {
    struct stack_record *next; /* in its hash chain (and the pool's link while free) */
    struct bucket *buckets;    /* this stack's, one per size */
    uint64_t hash;
    int depth;
    uintptr_t pcs[HC_PROFILE_MAX_DEPTH];
} stack_record;

typedef struct bucket {
    struct bucket *next;       /* in its hash chain (and the pool's link while free) */
    struct bucket *next_of_stack;
    const stack_record *stack;
    size_t size;               /* bytes asked for */
    /* Sampled. allocs is written under profile_lock, frees by the freeing
     * thread (an atomic add, no lock); dumps read both without the lock, frees
     * first with an acquire, so that they never see more frees than
     * allocations. */
    size_t allocs, frees;
    /* The leak check's, under profile_lock: live samples at exit that
     * nothing reachable points to, and those something does. */
    size_t leaked, reachable;
} bucket;

/* A sampled block not yet freed: what its span keeps (span.h's
 * layer_record). On the list of live blocks, under profile_blocks_lock. */
typedef struct sampled_block {
    struct sampled_block *next, *prev;
    bucket *bucket;
    uintptr_t start;
} sampled_block;

#define STACK_HEADS 1024

/* The bucket table's lock (sampled allocations), and the live blocks' own
 * (sampled allocations and frees), taken after profile_lock where both are. */
extern hc_lock profile_lock;
extern hc_lock profile_blocks_lock;
extern sampled_block *profile_live_blocks; /* under profile_blocks_lock */
/* Every stack, by hash chain: joined with store-releases, never freed, so a
 * dump walks them with acquire loads and no lock. */
extern stack_record *profile_stack_heads[STACK_HEADS];
extern size_t profile_samples, profile_dropped; /* under profile_lock */
extern size_t profile_live_samples;              /* atomic: sampled blocks not yet freed */
extern int profile_unwinder_primed;              /* atomic: the constructor ran */

/* Bucket counts as a dump without the lock reads them. */
HC_INLINE void bucket_counts(const bucket *b, size_t *allocs, size_t *frees) {
    *frees = __atomic_load_n(&b->frees, __ATOMIC_ACQUIRE);
    *allocs = __atomic_load_n(&b->allocs, __ATOMIC_RELAXED);
}

HC_INLINE size_t live_count(const bucket *b) {
    size_t allocs, frees;
    bucket_counts(b, &allocs, &frees);
    return allocs - frees;
}

/* Every bucket, stack by stack, as a dump walks them (with or without the lock). */
HC_INLINE stack_record *first_stack_of_chain(size_t i) {
    return __atomic_load_n(&profile_stack_heads[i], __ATOMIC_ACQUIRE);
}
HC_INLINE bucket *first_bucket_of(const stack_record *st) {
    return __atomic_load_n(&st->buckets, __ATOMIC_ACQUIRE);
}
#define FOR_EACH_BUCKET(st, b)                                                    \
    for (size_t chain_ = 0; chain_ < STACK_HEADS; chain_++)                       \
        for (const stack_record *st = first_stack_of_chain(chain_); st != NULL;   \
             st = st->next)                                                       \
            for (bucket *b = first_bucket_of(st); b != NULL; b = b->next_of_stack)

/* ---- profile_maps.c ------------------------------------------------------------- */

/* Taken by dumps alone, and by the fork handlers (profile.c). */
extern hc_lock profile_maps_lock;
/* The MAPPED_LIBRARIES section's lines. */
void profile_put_maps(hc_fd_out *o);

/* ---- profile_writer.c ----------------------------------------------------------- */

/* PREFIX.<pid>.<tag>.heap into path (PREFIX: the option, or `prefix`); 0, or
 * -1 if there is no prefix or it does not fit. */
int profile_path(const char *tag, char *path, size_t size);
int profile_path_with(const char *prefix, const char *tag, char *path, size_t size);
/* A profile written whole to `path` (leaks_only: the leak check's). */
void profile_write_to(const char *path, int leaks_only);
/* PREFIX.<pid>.<n>.heap, n counting up. */
void profile_write_numbered(void);
/* An interval's profile, unless the last one was too recent. */
void profile_dump_interval(void);
size_t profile_files_written(void);

/* ---- profile_leak.c ------------------------------------------------------------- */

/* HCMALLOC_LEAK_CHECK=level at exit; the stack scan starts at `stack_from`. */
void profile_leak_check(int level, const void *stack_from);

#endif /* HC_PROFILE_INTERNAL_H_ */
