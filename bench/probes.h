/* bench/probes.h — what a run's memory came to: the peak resident set, and
 * what the allocator holds at the end.
 * May touch: nothing; probes.c reads /proc and asks the allocator. */
#ifndef BENCH_PROBES_H
#define BENCH_PROBES_H

/* The kernel's high-water mark of this process's resident set, in KiB; -1
 * when /proc cannot say. */
long peak_rss_kib(void);

/* Memory held at the end of a run, in KiB; *source says how it was
 * measured: "stats" (hcmalloc's own count) or "rss". */
long end_mapped_kib(const char **source);

#endif
