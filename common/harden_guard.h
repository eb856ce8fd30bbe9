/* common/harden_guard.h — the hardened build's guarded blocks: every block
 * of HARDEN_GUARD_MIN_SIZE bytes or more gets a mapping of its own, with
 * pages that fault on both sides, and a freed one is kept unreachable for a
 * while before its addresses can be handed out again.
 *
 * Layout of one guarded block (OS pages of os_page_size() bytes):
 *
 *     | no access: 1 MiB+ | block (rounded to pages)   | no access: a page |
 *                              ^p          p + size ^  ^
 *
 * The block ends where the page after it begins (it is right-aligned, to
 * the largest power of two dividing its size, at most HC_PAGE_SIZE, so
 * aligned_alloc's class-sized requests stay aligned): a write one byte past
 * it faults, and a write before it faults once it leaves the block's first
 * page (at once when the size is a multiple of a page, as 4 KiB and
 * 256 KiB are).
 *
 * Stops: linear overflows and underflows of big blocks (one byte, 32
 * bytes, a memcpy one too long, a megabyte below), reads and writes after
 * free (above HARDEN_GUARD_KEEP_BYTES the freed block is no-access in the
 * quarantine below; under it, it reads as zeros and a write is caught
 * when it leaves the quarantine), reuse of a
 * freed block's addresses by the next malloc (use after free that turns
 * into type confusion), and hands out zeroed memory.
 * Cannot stop: an overflow that jumps over the page after the block, an
 * underflow into the slack of a block whose size is not a page multiple,
 * anything done after the block's addresses left the quarantine.
 * Costs: up to HARDEN_GUARD_KEEP_BYTES, a clear at free (of the lines the
 * program left non-zero) and a zero check when it leaves the quarantine,
 * no system call once its mapping is a spare of the same shape; above, two
 * system calls (unprotect at malloc, protect at free) and, while
 * HARDEN_GUARD_HOLD_BYTES holds its pages, a memset at the malloc that
 * reuses them, else a fault per page touched (per huge page from
 * HARDEN_GUARD_HUGE_BYTES); a fresh mapping
 * two more (map, and unmap when it leaves the spares); a realloc that
 * grows, a move: of the block's pages by the kernel when it grows by whole
 * pages (harden_guarded_move), else a copy; and a table look-up
 * under one lock (a leaf lock, below) per call. Blocks under HARDEN_GUARD_MIN_SIZE, and every
 * fast path, pay nothing (docs/design.md, section 6).
 *
 * Stage 3's malloc.c calls these on its slow paths only; in the default
 * build they are constants and the calls compile to nothing.
 * May touch: the mappings it makes, its table and quarantine (harden_guard.c). */
#ifndef HC_HARDEN_GUARD_H_
#define HC_HARDEN_GUARD_H_

#include <stddef.h>

#include "common/compiler.h"
#include "common/harden.h"
#include "common/hcmalloc.h"

/* Blocks this big or bigger are guarded: one OS page, the size from which
 * a guard page costs at most as much address space as the block. */
#define HARDEN_GUARD_MIN_SIZE ((size_t)4096)

/* No-access bytes below each block (a page above it): an underflow that
 * skips far below the block, by up to a megabyte, still faults instead of
 * landing in whatever the kernel mapped next to it. Address space only. */
#define HARDEN_GUARD_BELOW ((size_t)1 << 20)

/* Freed guarded blocks held before their mapping may serve another block
 * (as a spare, below) or go back to the OS: a program may free this many
 * guarded blocks before an old address recurs. */
#define HARDEN_GUARD_QUARANTINE 256

/* A freed guarded block this small (its pages) is zeroed and stays mapped
 * in the quarantine, with no system call: a read after free sees zeros, a
 * write after free stops the program when the block leaves the quarantine
 * (it must still be zero). Its mapping is then reused as it is. Such
 * pages stay resident: at most HARDEN_GUARD_QUARANTINE * 64 KiB = 16 MiB
 * in the quarantine and HARDEN_GUARD_SPARE_KEPT_BYTES in the spares, for a
 * program that frees many big blocks in a burst. Bigger blocks are made no-access at free,
 * their pages held or dropped (HARDEN_GUARD_HOLD_BYTES). A protection change costs a program with threads
 * a TLB shootdown: xmalloc-test's 32 KiB batches, one per 4,096 objects,
 * made it four times slower with them. */
#define HARDEN_GUARD_KEEP_BYTES ((size_t)64 << 10)

/* At most this many bytes of freed guarded blocks over
 * HARDEN_GUARD_KEEP_BYTES keep their pages (harden_guard.c), no-access
 * like the rest: the malloc that reuses the mapping zeroes them, which
 * costs a memset where a dropped block's pages cost a fault, a page's
 * allocation and the kernel's zeroing each when written (a program that
 * frees and allocates blocks of 64 KiB to a few MiB: mstress,
 * malloc-large). Beyond it a freed block's memory is dropped. */
#define HARDEN_GUARD_HOLD_BYTES ((size_t)32 << 20)

/* A guarded block this big or bigger asks the kernel for transparent huge
 * pages (harden_guard.c): one x86-64 huge page. */
#define HARDEN_GUARD_HUGE_BYTES ((size_t)2 << 20)

/* Mappings out of the quarantine kept for reuse by a block of the same
 * mapping length (harden_guard.c, a list per length): a program that frees
 * many blocks, then allocates many (rptest), finds one for each instead of
 * mapping anew. With 512, rptest's two threads, about 1,500 guarded blocks
 * live at their peak, unmapped a spare for a third of their frees and
 * mapped anew for as many mallocs: each a system call that changes the
 * mappings, and with two threads a TLB shootdown. */
#define HARDEN_GUARD_SPARES 4096

/* At most this many bytes of kept blocks' pages (HARDEN_GUARD_KEEP_BYTES
 * or less each: readable, zero) wait in the spares: a kept mapping leaving
 * the quarantine past it is unmapped instead of kept, so a burst of frees
 * of 4,096 blocks of 64 KiB does not leave 256 MiB resident. */
#define HARDEN_GUARD_SPARE_KEPT_BYTES ((size_t)32 << 20)

/* At most this many guarded mappings at once (live blocks, the
 * quarantine's, the spares), two of the process's memory areas each: with
 * Linux's default vm.max_map_count (65,530) half the areas stay for the
 * heap's own mappings and the program's. Past it a malloc gets an
 * unguarded block: a program with 40,000 live 8 KiB blocks used every area
 * the kernel allows, and then the heap could map no span for the unguarded
 * blocks either (malloc returned NULL). */
#define HARDEN_GUARD_MAX_MAPPINGS 16384

#if HC_HARDENED

/* Whether a request of `size` bytes becomes a guarded block. */
HC_INLINE int harden_guards(size_t size) { return size >= HARDEN_GUARD_MIN_SIZE; }

/* A guarded block of `size` bytes (>= 1); NULL, errno unchanged, when no
 * mapping could be had or HARDEN_GUARD_MAX_MAPPINGS are in use: the
 * caller then hands out an unguarded block, so a program with many big
 * blocks runs on, less protected. NULL too when a signal handler that
 * interrupted this thread inside the table's section calls malloc (in the
 * process or in a child it forked): the section cannot be waited for. */
void *harden_guarded_alloc(size_t size);

/* realloc of guarded block `p` to `size` bytes, more than it holds: a new
 * guarded mapping, into which the kernel carries the block's pages
 * (mremap), no byte copied; the old addresses then fault, or read as zeros
 * and are checked, as a freed block's do (the quarantine). Done only when
 * the block keeps its offset in its first page, which a size grown by
 * whole pages does; NULL, errno and the block unchanged, otherwise, or when
 * the kernel cannot (Linux before 5.7) or no mapping can be had: the
 * caller copies. A buffer grown by 4 KiB steps was copied whole at every
 * step, quadratic in its size. */
void *harden_guarded_move(void *p, size_t size);

/* Bytes usable at `p` if it is a guarded block's start, else 0: a pointer
 * anywhere else (inside one, or a freed one) is not a guarded block. */
size_t harden_guarded_size(const void *p);

/* Frees `p` and returns 1 if it is a live guarded block's start, else 0
 * (the caller goes on: another kind of block, or an invalid pointer).
 * Called from a signal handler that interrupted this thread inside the
 * table's section, it returns 1 and frees nothing: the block is left
 * mapped and live (a leak, not a hang and not a corrupted table). */
int harden_guarded_free(void *p);

/* Adds the live guarded blocks to hc_get_stats' figures: their usable
 * bytes to bytes_in_use, their pages to os_mapped_bytes (the page cache
 * never sees them; the no-access guards are address space only). */
void harden_guarded_collect_stats(hc_stats *out);

/* Unmaps every freed guarded block still held (the quarantine, the
 * spares): the out-of-memory retry's last resort (stage 4's
 * hc_layer_reclaim_for_retry) and a failed mapping's. Bytes given back. */
size_t harden_guarded_drain(void);

/* The table's lock across fork() (stage 4's fork.c takes it last, after
 * every allocator lock: nothing holding it takes another). */
void harden_guard_fork_lock(void);
void harden_guard_fork_unlock(int in_child);

/* The hardened build's two locks (the guarded blocks' table, malloc(0)'s
 * regions) are leaves: nothing else is taken while one is held, and
 * nothing is held when one is taken. Each is a lock word that names its
 * holder, a small id of the thread (0: free; the top bit: a thread may be
 * waiting, in the kernel's futex queue), so that a fork can ask whether
 * its own thread holds it, exactly.
 *
 * Why the fork must ask: a signal handler may fork in the middle of this
 * thread's section (POSIX 2024 no longer lists fork() as async-signal-safe,
 * and glibc's own malloc hangs there, but programs do it). A prepare
 * handler that waits for a lock its own thread holds waits forever. So
 * harden_leaf_fork_lock takes the lock unless this thread holds it, and
 * says which (1: held before); harden_leaf_fork_unlock then leaves such a
 * lock to the interrupted section, in the parent and in the child, which
 * finishes it once the handler returns. A pthread mutex cannot answer
 * exactly: glibc writes its owner after taking the lock word and clears it
 * before letting go, and a signal lands in those windows most of all, at
 * the return of the futex calls inside them.
 *
 * The checker flavours (TSan, Valgrind) build without HC_HARDENED, so no
 * checker meets this lock. */
typedef struct {
    unsigned word;
} harden_leaf_lock_t;

#define HARDEN_LEAF_LOCK_INITIALIZER { 0 }

/* Skipped, as common/lock.h skips the allocator's, while this thread holds
 * every lock for a fork (a prepare handler registered before hcmalloc's
 * may allocate). */
void harden_leaf_lock(harden_leaf_lock_t *lock);
void harden_leaf_unlock(harden_leaf_lock_t *lock);
/* 1 when this thread holds `lock` outside a fork's prepare: a signal
 * handler that interrupted this thread's section has called back into the
 * allocator (in the process, or in the child of a fork it made). Waiting
 * would wait for itself, and the section's data is half written. */
int harden_leaf_reentered(const harden_leaf_lock_t *lock);
int harden_leaf_fork_lock(harden_leaf_lock_t *lock);
void harden_leaf_fork_unlock(harden_leaf_lock_t *lock, int held_before, int in_child);

#else /* !HC_HARDENED: no guarded blocks */

HC_INLINE int harden_guards(size_t size) { (void)size; return 0; }
HC_INLINE void *harden_guarded_alloc(size_t size) { (void)size; return NULL; }
HC_INLINE void *harden_guarded_move(void *p, size_t size) { (void)p; (void)size; return NULL; }
HC_INLINE size_t harden_guarded_size(const void *p) { (void)p; return 0; }
HC_INLINE int harden_guarded_free(void *p) { (void)p; return 0; }
HC_INLINE void harden_guarded_collect_stats(hc_stats *out) { (void)out; }
HC_INLINE size_t harden_guarded_drain(void) { return 0; }
HC_INLINE void harden_guard_fork_lock(void) {}
HC_INLINE void harden_guard_fork_unlock(int in_child) { (void)in_child; }

#endif /* HC_HARDENED */

#endif /* HC_HARDEN_GUARD_H_ */
