/* bench/callgrind_loop.h — the fast-path loop bench.py counts under
 * callgrind (`bench_driver callgrind`).
 * May touch: nothing; callgrind_loop.c calls the allocator. */
#ifndef BENCH_CALLGRIND_LOOP_H
#define BENCH_CALLGRIND_LOOP_H

#include <stddef.h>

/* iterations pairs of malloc(size)+free after a warm-up; keep_one_live: one
 * more block of the class stays live throughout. Returns the exit status. */
int callgrind_loop(long iterations, int keep_one_live, size_t size);

#endif
