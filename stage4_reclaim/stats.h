/* stage4_reclaim/stats.h — layer 4: the stats report, malloc_stats() style.
 *
 * The drop-in library calls it for malloc_stats() and, with HCMALLOC_STATS=1,
 * at exit. Written with write(2) into a stack buffer: no stdio, no malloc,
 * so it is safe to call from inside the allocator's own exit path. */
#ifndef HC_STAGE4_STATS_H_
#define HC_STAGE4_STATS_H_


#include <stddef.h>

/* Writes the report to file descriptor `fd` (2 for stderr). */
void hc_print_stats(int fd);

/* Formats the report into buf (NUL-terminated, cut short if it does not
 * fit) and returns its length; hc_print_stats writes this. */
size_t hc_format_stats(char *buf, size_t size);

#endif /* HC_STAGE4_STATS_H_ */
