/* common/os.h — the only place hcmalloc talks to the kernel about memory.
 *
 * Every mapping goes through here so that (1) failure is reported, never
 * aborted on: the caller gets NULL and errno = ENOMEM; (2) the bytes mapped
 * are counted for hc_get_stats; (3) tests can make mappings fail on purpose. */
#ifndef HC_OS_H_
#define HC_OS_H_


#include <stddef.h>

/* Maps `bytes` (a multiple of the OS page) of zeroed, read-write memory.
 * NULL with errno = ENOMEM on failure. */
void *os_map(size_t bytes);

/* Like os_map, with the start aligned to `alignment` (a power of two, at
 * least the OS page): maps extra and trims both ends. */
void *os_map_aligned(size_t bytes, size_t alignment);

/* Like os_map, but exactly at `addr` (page-aligned) or not at all: NULL
 * when anything is mapped there already (the kernel's MAP_FIXED_NOREPLACE;
 * a kernel that ignores the flag and maps elsewhere is undone). For the
 * page cache, which grows a free span into the pages next to it. */
void *os_map_at(void *addr, size_t bytes);

/* Unmaps what os_map returned (or any page-aligned part of it). Neither this
 * nor os_release changes errno: free calls them. */
void os_unmap(void *addr, size_t bytes);

/* Grows the mapping [addr, addr + bytes) to new_bytes where it lies (the
 * kernel's mremap, not allowed to move it): 0, or -1 with nothing changed
 * when the pages after it are taken. Counted, observed and refused by the
 * test hooks as a mapping of the extra bytes is. */
int os_grow_in_place(void *addr, size_t bytes, size_t new_bytes);

/* Moves the mapping [addr, addr + bytes) onto `dest`, a mapping of
 * new_bytes (at least `bytes`) that os_map or os_map_aligned made for it,
 * which it replaces: the kernel carries the pages over in its page tables,
 * no byte is copied, and nothing is mapped at addr afterwards. 0, or -1
 * with nothing changed. */
int os_move_mapping(void *addr, size_t bytes, void *dest, size_t new_bytes);

/* Gives the physical pages back (MADV_DONTNEED) but keeps the address range:
 * the next touch faults in a zeroed page. Returns 0, or -1 if the kernel
 * refused (the memory is then simply still resident); errno is unchanged. */
int os_release(void *addr, size_t bytes);

/* Asks the OS to back the pages of [addr, addr + bytes) (page-aligned) now,
 * in one call (Linux's MADV_POPULATE_WRITE, from 5.14), instead of one page
 * fault at the first write to each: for memory about to be written page by
 * page. A hint, never an error: a kernel without it is asked once, and the
 * pages then fault in as before; errno is unchanged. */
void os_populate(void *addr, size_t bytes);

/* Memory about to be written once every `stride` bytes from `first` to
 * first + length (a span's never-used slots getting their links): backs the
 * pages those writes will touch in one os_populate instead of a fault at
 * each, when they touch every page of the range (stride at most an OS
 * page: a larger object's other pages are the program's to touch or not)
 * and there are two pages or more (for one, the fault is the call). Else
 * nothing. On this project's machine a refill from a new span spent more
 * time entering the kernel for its faults than in it. */
void os_back_before_writes(void *first, size_t length, size_t stride);

/* Asks the OS to back [addr, addr + bytes) with huge pages where it can
 * (Linux's MADV_HUGEPAGE: each whole, aligned 2 MiB inside is then one
 * fault and one TLB entry, when the machine's transparent huge pages are
 * in "madvise" or "always" mode). A hint, never an error; errno is
 * unchanged. */
void os_advise_huge(void *addr, size_t bytes);

/* Bytes mapped through this file and not yet unmapped. */
size_t os_mapped_bytes(void);

/* OS page size (4 KiB on x86-64), read once. */
size_t os_page_size(void);

/* ---- Test hooks: fault injection ------------------------------------------
 * os_fail_next_maps(n): the next n calls to os_map / os_map_aligned fail
 * with ENOMEM. os_fail_maps_randomly(one_in, seed): from now on each call
 * fails with probability 1/one_in (0 turns it off). Both are cheap atomics on
 * the mapping path only, never on the allocation fast path. */
void os_fail_next_maps(unsigned n);
void os_fail_maps_randomly(unsigned one_in, unsigned seed);
/* Mappings refused by the hooks so far. */
unsigned long os_injected_failures(void);
/* os_set_map_observer(fn): fn(bytes) runs just before every mapping
 * attempt (NULL removes it). Lets a test check which locks are held when the
 * allocator calls into the kernel. */
void os_set_map_observer(void (*observer)(size_t bytes));
/* os_set_populate_observer(fn): fn(addr, bytes) runs at every os_populate
 * (NULL removes it): which pages the allocator backs ahead of its writes. */
void os_set_populate_observer(void (*observer)(void *addr, size_t bytes));

#endif /* HC_OS_H_ */
