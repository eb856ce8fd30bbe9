/* stage4_reclaim/leak_scan.h — layer 4, the leak check: which of the
 * sampled blocks still live at exit the program can still reach.
 *
 * A conservative scan, as gperftools' heap checker and LeakSanitizer do it:
 * every aligned word of the roots that holds an address inside a block
 * (its start or any interior byte) makes the block reachable, and a
 * reachable block's own words are scanned in turn. The roots:
 *   - the writable segments (.data, .bss, RELRO) of every loaded object;
 *   - the calling thread's stack above `stack_from`, if it is the main
 *     thread (the one whose stack the loader recorded);
 *   - every block of the heap the profiler did not sample (small-object
 *     spans whole, free objects included, and unsampled large blocks): it
 *     cannot tell which of those are live, so it takes them all.
 * What it cannot see: other threads' stacks and registers, thread-local
 * variables, memory the program mapped itself, pointers hidden (XORed,
 * compressed, stored as offsets). A block reachable only that way is
 * reported as a leak; a leaked block whose address survives in an unsampled
 * block or a dead stack slot is taken for reachable. docs/dropin.md, "The
 * leak check". */
#ifndef HC_LEAK_SCAN_H_
#define HC_LEAK_SCAN_H_

#include <stddef.h>
#include <stdint.h>

typedef struct leak_block {
    uintptr_t start, end; /* the bytes the program asked for, [start, end) */
    void *owner;          /* the caller's record of the block (profile_leak.c: its bucket) */
    int reachable;        /* set by leak_scan */
} leak_block;

/* The loaded objects' writable segments, read before the caller takes its
 * lock: the loader holds its own lock while it calls malloc, so the
 * profiler's lock must never be held around a loader call. */
#define LEAK_MAX_SEGMENTS 512

typedef struct leak_roots {
    uintptr_t start[LEAK_MAX_SEGMENTS], end[LEAK_MAX_SEGMENTS];
    size_t count;
    int truncated; /* more segments than fit: the rest are not scanned */
} leak_roots;

void leak_collect_roots(leak_roots *roots);

/* Marks each of blocks[0..n) that the roots reach, directly or through
 * other marked blocks. `blocks` sorted by start, not overlapping; `work`
 * room for n indices; the stack is scanned from `stack_from` up. Takes the
 * page cache's lock (pc_visit_spans), so the caller must hold no allocator
 * lock but its own, and must keep the blocks from being freed meanwhile. */
void leak_scan(leak_block *blocks, size_t n, size_t *work, const leak_roots *roots,
               const void *stack_from);

#endif /* HC_LEAK_SCAN_H_ */
