/* bench/heapmap.h — heap maps of a run (BENCH_HEAPMAP=PREFIX, set by
 * bench.py --heapmap): with a preloaded hcmalloc that has hc_dump_heap_svg
 * (stage 4's traced drop-in), a run writes PREFIX-peak.svg (the heap when
 * the program's bytes in use were highest, sampled every 2 ms) and
 * PREFIX-end.svg (after the workload). Otherwise both calls do nothing.
 * May touch: nothing; heapmap.c starts a thread and writes the files. */
#ifndef BENCH_HEAPMAP_H
#define BENCH_HEAPMAP_H

/* Before the workload: starts the sampler. */
void heapmap_start(void);

/* After the workload: stops it and writes the end picture. */
void heapmap_finish(void);

#endif
