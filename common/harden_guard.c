/* common/harden_guard.c — the hardened build's guarded blocks (harden_guard.h):
 * one mapping per block, a table from block start to mapping, and the
 * quarantine of freed mappings; its leaf lock is harden_leaf_lock.c's.
 * Empty in the default build. Never calls
 * malloc: the table is mapped from the OS, reports go through fatal.c.
 * Locking: one leaf lock (harden_guard.h) for the table, the quarantine
 * and the spares, never held across a system call but the table's rare
 * growth; every caller is a slow path. */
#define _GNU_SOURCE /* MAP_NORESERVE */
#include "common/harden_guard.h"

#if HC_HARDENED

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/os.h"
#include "common/size_class.h"

/* One live guarded block. user 0: an empty entry; GUARD_GONE: a removed
 * one (open addressing keeps probing past it). */
typedef struct {
    uintptr_t user; /* the address the program got */
    uintptr_t base; /* the mapping: [base, base + len) */
    size_t len;
    size_t usable; /* from user to the page after the block */
} guard_entry;

#define GUARD_GONE ((uintptr_t)1)
#define GUARD_FIRST_CAPACITY 1024 /* entries: 32 KiB, grown by doubling */

static guard_entry *table;
static size_t capacity, occupied /* live and gone */, live;
/* The live blocks' usable bytes and their pages' bytes, for the stats
 * (harden_guarded_collect_stats). Under guard_lock. */
static size_t live_usable_bytes, live_page_bytes;

typedef struct {
    uintptr_t base;
    size_t len;
    /* A kept mapping (a freed block of HARDEN_GUARD_KEEP_BYTES or less)
     * stays readable and writable in [first, end), zeroed at free and
     * checked to be zero still when it leaves the quarantine; otherwise
     * first = end = 0: all of it no-access. */
    uintptr_t first, end;
    /* A held mapping (a bigger block, while held_bytes allows): made
     * no-access at free with its pages kept, `held` bytes of them, to be
     * zeroed by the malloc that reuses it instead of faulted in anew;
     * otherwise 0, its memory dropped. */
    size_t held;
} guard_mapping;

/* The held mappings' pages, in the quarantine and the spares (at most
 * HARDEN_GUARD_HOLD_BYTES). Under guard_lock. */
static size_t held_bytes;

/* The kept spares' readable pages (at most HARDEN_GUARD_SPARE_KEPT_BYTES).
 * Under guard_lock. */
static size_t spare_kept_bytes;

static size_t kept_bytes_of(const guard_mapping *m) { return m->end - m->first; }

/* Guarded mappings that exist (live, quarantined, spare): at most
 * HARDEN_GUARD_MAX_MAPPINGS. Atomic: mapped and unmapped outside the lock. */
static size_t mappings;

static void unmap_guarded(uintptr_t base, size_t len) {
    munmap((void *)base, len);
    __atomic_fetch_sub(&mappings, 1, __ATOMIC_RELAXED);
}

static guard_mapping quarantine[HARDEN_GUARD_QUARANTINE];
static unsigned quarantine_next; /* the oldest entry: the next to leave */

/* Mappings out of the quarantine, kept for a block that needs one of the
 * same length: then a guarded malloc and free cost no system call (a kept
 * one) or one each (unprotect, remap) instead of four. Each length has a
 * list of its own (spare_heads, by a hash of the length; spares of other
 * lengths sharing a list are skipped), so finding one is a short walk, and
 * a spare is dropped only when all HARDEN_GUARD_SPARES are in use: a ring
 * over one array, which evicted a spare whenever its slot came round even
 * with others free, cost a program freeing and allocating blocks of
 * sixteen lengths (rptest) a munmap, a later mmap and a TLB shootdown for
 * most of its guarded blocks. */
#define SPARE_LISTS 64
#define SPARE_NONE 0xFFFFu
typedef struct {
    guard_mapping mapping;
    unsigned short next; /* in its length's list, or in the unused list */
} guard_spare;
_Static_assert(HARDEN_GUARD_SPARES < SPARE_NONE, "a spare's index fits its links");
static guard_spare spares[HARDEN_GUARD_SPARES];
static unsigned short spare_heads[SPARE_LISTS], spare_unused = SPARE_NONE;
static int spares_ready; /* the lists are built on first use */

static unsigned spare_list_of(size_t len) {
    return (unsigned)(((len >> 12) * UINT64_C(0x9E3779B97F4A7C15)) >> 58) & (SPARE_LISTS - 1);
}

/* Under guard_lock: the lists, all spares unused. */
static void spares_init(void) {
    for (unsigned i = 0; i < SPARE_LISTS; i++)
        spare_heads[i] = SPARE_NONE;
    for (unsigned i = 0; i < HARDEN_GUARD_SPARES; i++)
        spares[i].next = (unsigned short)(i + 1 < HARDEN_GUARD_SPARES ? i + 1 : SPARE_NONE);
    spare_unused = 0;
    spares_ready = 1;
}

/* Under guard_lock: a spare of length `len` taken out of its list, or one
 * with len 0 when there is none. */
static guard_mapping spare_take(size_t len) {
    guard_mapping found = {0, 0, 0, 0, 0};
    if (!spares_ready)
        return found;
    unsigned short *link = &spare_heads[spare_list_of(len)];
    while (*link != SPARE_NONE && spares[*link].mapping.len != len)
        link = &spares[*link].next;
    if (*link == SPARE_NONE)
        return found;
    unsigned short i = *link;
    found = spares[i].mapping;
    held_bytes -= found.held; /* a live block's pages now */
    spare_kept_bytes -= kept_bytes_of(&found);
    *link = spares[i].next;
    spares[i].next = spare_unused;
    spare_unused = i;
    return found;
}

/* Under guard_lock: m kept as a spare. When all are in use, another
 * length's spare makes room (the lists taken in turn, so a program whose
 * block sizes change gets spares of its new lengths); it is returned for
 * the caller to unmap, else one with len 0. A kept m that would take the
 * spares' kept pages past HARDEN_GUARD_SPARE_KEPT_BYTES is returned itself. */
static guard_mapping spare_put(guard_mapping m) {
    static unsigned evict_next; /* the list the next eviction starts at */
    guard_mapping evicted = {0, 0, 0, 0, 0};
    if (!spares_ready)
        spares_init();
    if (spare_kept_bytes + kept_bytes_of(&m) > HARDEN_GUARD_SPARE_KEPT_BYTES)
        return m;
    if (spare_unused == SPARE_NONE) {
        unsigned list = evict_next;
        while (spare_heads[list] == SPARE_NONE) /* all in use: one list has one */
            list = (list + 1) & (SPARE_LISTS - 1);
        evict_next = (list + 1) & (SPARE_LISTS - 1);
        unsigned short i = spare_heads[list];
        evicted = spares[i].mapping;
        held_bytes -= evicted.held;
        spare_kept_bytes -= kept_bytes_of(&evicted);
        spare_heads[list] = spares[i].next;
        spares[i].next = SPARE_NONE;
        spare_unused = i;
    }
    unsigned short i = spare_unused;
    spare_unused = spares[i].next;
    unsigned list = spare_list_of(m.len);
    spares[i] = (guard_spare){m, spare_heads[list]};
    spare_heads[list] = i;
    spare_kept_bytes += kept_bytes_of(&m);
    return evicted;
}

static harden_leaf_lock_t guard_lock = HARDEN_LEAF_LOCK_INITIALIZER;
static int guard_lock_held_before_fork;
static int guarded_free(void *p, int emptied);

static size_t slot_of(uintptr_t user, size_t cap) {
    return (size_t)(((user >> 4) * UINT64_C(0x9E3779B97F4A7C15)) >> 20) & (cap - 1);
}

/* The entry for `user`, or NULL. Under guard_lock. */
static guard_entry *find(uintptr_t user) {
    if (table == NULL)
        return NULL;
    for (size_t i = slot_of(user, capacity);; i = (i + 1) & (capacity - 1)) {
        if (table[i].user == user)
            return &table[i];
        if (table[i].user == 0)
            return NULL;
    }
}

/* Room for one more entry: a table rebuilt without its gone entries,
 * twice as big when half of it is live. 0, or -1 when no memory could be
 * had. Under guard_lock (a rare mmap while holding it: the table's own). */
static int make_room(void) {
    if (table != NULL && (occupied + 1) * 2 <= capacity)
        return 0;
    size_t cap = table == NULL ? GUARD_FIRST_CAPACITY : capacity;
    if ((live + 1) * 4 > cap)
        cap *= 2;
    guard_entry *fresh = os_map(cap * sizeof *fresh); /* zero: all empty */
    if (fresh == NULL)
        return -1;
    for (size_t i = 0; table != NULL && i < capacity; i++) {
        if (table[i].user <= GUARD_GONE)
            continue;
        size_t j = slot_of(table[i].user, cap);
        while (fresh[j].user != 0)
            j = (j + 1) & (cap - 1);
        fresh[j] = table[i];
    }
    if (table != NULL)
        os_unmap(table, capacity * sizeof *table);
    table = fresh;
    capacity = cap;
    occupied = live;
    return 0;
}

/* Where a block of `size` bytes lies in a mapping at `base` whose data
 * part is `data` bytes: at `user`, right-aligned to `align` so that its
 * end meets the guard page, in the pages [first, end). */
typedef struct {
    uintptr_t user, first, end;
} guard_place;

static guard_place place_in(uintptr_t base, size_t size, size_t data, size_t align, size_t page) {
    uintptr_t user = (base + HARDEN_GUARD_BELOW + data - size) & ~(uintptr_t)(align - 1);
    return (guard_place){user, user & ~(uintptr_t)(page - 1),
                         (user + size + page - 1) & ~(uintptr_t)(page - 1)};
}

/* Under guard_lock: the live block at `user` recorded. 0, or -1 when the
 * table had no room and could not grow. */
static int insert_locked(uintptr_t user, uintptr_t base, size_t len, uintptr_t first, uintptr_t end) {
    if (make_room() != 0)
        return -1;
    guard_entry *e = &table[slot_of(user, capacity)];
    while (e->user > GUARD_GONE)
        e = &table[((size_t)(e - table) + 1) & (capacity - 1)];
    if (e->user == 0)
        occupied++;
    *e = (guard_entry){.user = user, .base = base, .len = len, .usable = end - user};
    live++;
    live_usable_bytes += end - user;
    live_page_bytes += end - first;
    return 0;
}

/* The mapping a block of `size` bytes needs: its alignment, its data
 * part, its whole length. */
typedef struct {
    size_t align, data, len;
} guard_shape;

static guard_shape shape_of(size_t size, size_t page) {
    /* Right-aligned to the largest power of two dividing size (at most
     * HC_PAGE_SIZE, at least 16); an alignment above a page needs up to
     * that much more room for the block's end to meet a page. */
    size_t align = size & -size;
    align = align > HC_PAGE_SIZE ? HC_PAGE_SIZE : align < 16 ? 16 : align;
    size_t data = (size + page - 1) & ~(page - 1);
    if (align > page)
        data += align - page;
    return (guard_shape){align, data, HARDEN_GUARD_BELOW + data + page};
}

/* A fresh no-access mapping of `len` bytes, counted; NULL when
 * HARDEN_GUARD_MAX_MAPPINGS are in use or the kernel refuses, errno
 * unchanged. */
static char *map_guarded(size_t len) {
    if (__atomic_fetch_add(&mappings, 1, __ATOMIC_RELAXED) >= HARDEN_GUARD_MAX_MAPPINGS) {
        __atomic_fetch_sub(&mappings, 1, __ATOMIC_RELAXED);
        return NULL; /* enough of the process's memory areas */
    }
    int saved_errno = errno;
    char *base = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED && harden_guarded_drain() != 0) /* freed blocks held the room */
        base = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    errno = saved_errno;
    if (base == MAP_FAILED) {
        __atomic_fetch_sub(&mappings, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    return base;
}

void *harden_guarded_alloc(size_t size) {
    size_t page = os_page_size();
    if (size > ((size_t)1 << 46)) /* more than the address space could hold */
        return NULL;
    int saved_errno = errno; /* the caller falls back to an unguarded block */
    guard_shape shape = shape_of(size, page);
    size_t align = shape.align, data = shape.data, len = shape.len;
    char *base = NULL;
    guard_mapping spare = {0, 0, 0, 0, 0};
    if (harden_leaf_reentered(&guard_lock))
        return NULL; /* from a signal handler inside the table's section: unguarded */
    harden_leaf_lock(&guard_lock);
    spare = spare_take(len);
    if (spare.len != 0) {
        /* A kept spare of the same shape is ready as it is (zero, checked as
         * it left the quarantine): recorded under the same lock, no system
         * call, one lock round for the whole malloc. */
        guard_place at = place_in(spare.base, size, data, align, page);
        if (spare.first == at.first && spare.end == at.end) {
            int recorded = insert_locked(at.user, spare.base, len, at.first, at.end);
            harden_leaf_unlock(&guard_lock);
            if (recorded == 0)
                return (void *)at.user;
            unmap_guarded(spare.base, len);
            errno = saved_errno;
            return NULL;
        }
        base = (char *)spare.base;
    }
    harden_leaf_unlock(&guard_lock);
    if (base == NULL && (base = map_guarded(len)) == NULL)
        return NULL; /* unguarded */
    guard_place at = place_in((uintptr_t)base, size, data, align, page);
    uintptr_t user = at.user, first = at.first, end = at.end; /* end: the guard after */
    /* A kept spare of another shape (readable) is made no-access first; a
     * fresh mapping, or a spare of a bigger block, is no-access already. */
    if (spare.end != 0 && mprotect(base, len, PROT_NONE) != 0)
        spare.end = 0; /* still readable, and all zero: checked as it left the quarantine */
    if (mprotect((void *)first, end - first, PROT_READ | PROT_WRITE) != 0) {
        unmap_guarded((uintptr_t)base, len);
        errno = saved_errno;
        return NULL;
    }
    if (spare.end != 0 || spare.held != 0)
        memset((void *)first, 0, end - first); /* pages an older block may have written */
    /* A block of huge pages' size or more asks for them (THP's "madvise"
     * mode, Debian's default): its fresh pages then come in a fault per
     * 2 MiB instead of one per page, which was most of a program's time
     * when it writes whole its multi-megabyte blocks (malloc-large). The
     * advice is the block's own: free replaces its mapping. */
    if (end - first >= HARDEN_GUARD_HUGE_BYTES)
        madvise((void *)first, end - first, MADV_HUGEPAGE);
    harden_leaf_lock(&guard_lock);
    int room = insert_locked(user, (uintptr_t)base, len, first, end);
    harden_leaf_unlock(&guard_lock);
    if (room != 0) {
        unmap_guarded((uintptr_t)base, len);
        errno = saved_errno;
        return NULL;
    }
    return (void *)user;
}

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4 /* Linux 5.7; older headers lack the name */
#endif

/* Under guard_lock: the live entry of a block that was never handed out
 * (a move that did not happen) taken out again. */
static void forget_locked(uintptr_t user, uintptr_t first, uintptr_t end) {
    guard_entry *e = find(user);
    e->user = GUARD_GONE;
    live--;
    live_usable_bytes -= end - user;
    live_page_bytes -= end - first;
}

void *harden_guarded_move(void *p, size_t size) {
    size_t page = os_page_size();
    if (size > ((size_t)1 << 46) || harden_leaf_reentered(&guard_lock))
        return NULL;
    harden_leaf_lock(&guard_lock);
    guard_entry *e = find((uintptr_t)p);
    guard_entry old = e != NULL ? *e : (guard_entry){0, 0, 0, 0};
    harden_leaf_unlock(&guard_lock);
    if (old.user == 0 || size <= old.usable)
        return NULL;
    uintptr_t old_first = old.user & ~(uintptr_t)(page - 1);
    size_t moved = old.user + old.usable - old_first; /* its pages: they end at its guard */
    guard_shape shape = shape_of(size, page);
    /* Its offset in its first page must stay; that offset does not depend
     * on where the mapping lies (a page boundary, and an alignment above a
     * page puts the block on one), so it is known before mapping. */
    if ((place_in(0, size, shape.data, shape.align, page).user & (page - 1)) != (old.user & (page - 1)))
        return NULL;
    char *base = map_guarded(shape.len);
    if (base == NULL)
        return NULL;
    guard_place at = place_in((uintptr_t)base, size, shape.data, shape.align, page);
    size_t added = at.end - at.first - moved;
    /* Recorded at its new place first, so that the move is never undone
     * for want of room in the table. */
    harden_leaf_lock(&guard_lock);
    int recorded = insert_locked(at.user, (uintptr_t)base, shape.len, at.first, at.end);
    harden_leaf_unlock(&guard_lock);
    int saved_errno = errno;
    /* The pages carried over; the old range stays mapped, empty (the
     * kernel's MREMAP_DONTUNMAP), so no one else's mapping can land where a
     * stale pointer would find it, and free quarantines it as it does a
     * freed block's. */
    if (recorded == 0 && mremap((void *)old_first, moved, moved, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP,
                                (void *)at.first) == MAP_FAILED) {
        harden_leaf_lock(&guard_lock);
        forget_locked(at.user, at.first, at.end);
        harden_leaf_unlock(&guard_lock);
        recorded = -1;
    }
    if (recorded != 0) {
        unmap_guarded((uintptr_t)base, shape.len);
        errno = saved_errno;
        return NULL;
    }
    /* The moved pages' area grown over the block's new pages: one area of
     * the kernel's. Opened by a protection change instead, the new pages
     * would be an area of their own that cannot merge with the moved one,
     * so a buffer grown a page at a time would be a thousand areas after a
     * thousand steps, and each move carries them all (docs/benchmarks.md,
     * section 28: slower than the copy). Between the two calls the gap is
     * free; should another thread's mapping land in it, the pages go back
     * and the buffer is copied instead. The range they leave is free too
     * (another mapping may land there at once): only the ends of the new
     * place are unmapped. */
    munmap((void *)(at.first + moved), added);
    if (mremap((void *)at.first, moved, moved + added, 0) == MAP_FAILED) {
        uintptr_t ours_up_to = at.first;
        if (mremap((void *)at.first, moved, moved, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)old_first) == MAP_FAILED) {
            memcpy((void *)old_first, (void *)at.first, moved); /* the old range is still ours, and writable */
            ours_up_to = at.first + moved;
        }
        munmap(base, ours_up_to - (uintptr_t)base);
        unmap_guarded(at.end, (uintptr_t)base + shape.len - at.end);
        harden_leaf_lock(&guard_lock);
        forget_locked(at.user, at.first, at.end);
        harden_leaf_unlock(&guard_lock);
        errno = saved_errno;
        return NULL;
    }
    if (at.end - at.first >= HARDEN_GUARD_HUGE_BYTES) /* as harden_guarded_alloc asks */
        madvise((void *)at.first, at.end - at.first, MADV_HUGEPAGE);
    guarded_free(p, 1);
    errno = saved_errno;
    return (void *)at.user;
}

size_t harden_guarded_size(const void *p) {
    harden_leaf_lock(&guard_lock);
    guard_entry *e = find((uintptr_t)p);
    size_t usable = e != NULL ? e->usable : 0;
    harden_leaf_unlock(&guard_lock);
    return usable;
}

void harden_guarded_collect_stats(hc_stats *out) {
    harden_leaf_lock(&guard_lock);
    out->bytes_in_use += live_usable_bytes;
    out->os_mapped_bytes += live_page_bytes;
    harden_leaf_unlock(&guard_lock);
}

/* A kept mapping leaving the quarantine: its bytes must be the zeros free
 * wrote, or the program wrote into a block it had freed. */
static void check_still_zero(const guard_mapping *m) {
    /* 64-byte vectors: at -O2 the compiler leaves a word loop scalar, and
     * this scan was the top of a profile of a program freeing many 4 to
     * 16 KiB blocks (rptest), above the memset at free. */
    typedef uint64_t chunk __attribute__((vector_size(64), aligned(64)));
    const chunk *c = (const chunk *)m->first, *end = (const chunk *)m->end;
    for (; c < end; c += 8) { /* first and end are page-aligned */
        chunk any = c[0] | c[1] | c[2] | c[3] | c[4] | c[5] | c[6] | c[7];
        uint64_t folded = 0;
        for (unsigned i = 0; i < 8; i++)
            folded |= any[i];
        if (HC_UNLIKELY(folded != 0))
            hc_fatal_pointer_why("free(): write after free detected in", c,
                                 "a freed guarded block changed in the quarantine");
    }
}

/* A kept block at free: its bytes zeroed, but only the 64-byte lines that
 * are not zero already. A block is handed out zero, and a program that
 * writes a few bytes a page (rptest: one a page and its last) leaves most
 * lines as they were; a memset of the whole block wrote every line, each a
 * cache miss and a later write-back, and was a tenth of that program's
 * profile. A line read and left alone stays clean. */
static void clear_written(uintptr_t first, uintptr_t end) {
    for (uint64_t *line = (uint64_t *)first; line < (uint64_t *)end; line += 8) { /* page-aligned */
        if ((line[0] | line[1] | line[2] | line[3] | line[4] | line[5] | line[6] | line[7]) != 0)
            memset(line, 0, 64);
    }
}

/* Every mapping in the quarantine and the spares back to the OS, the
 * quarantine's kept blocks checked first as when they leave it: freed
 * guarded blocks hold address space (HARDEN_GUARD_BELOW and a guard page
 * each), and under an address-space limit (RLIMIT_AS) that is what a new
 * block lacks. Their addresses may then recur at once: only where the OS
 * already said no. Returns the bytes of address space given back. */
size_t harden_guarded_drain(void) {
    size_t bytes = 0;
    harden_leaf_lock(&guard_lock);
    for (unsigned i = 0; i < HARDEN_GUARD_QUARANTINE; i++) {
        guard_mapping *m = &quarantine[i];
        if (m->len == 0)
            continue;
        if (m->end != 0)
            check_still_zero(m);
        unmap_guarded(m->base, m->len);
        bytes += m->len;
        held_bytes -= m->held;
        *m = (guard_mapping){0, 0, 0, 0, 0};
    }
    for (unsigned list = 0; spares_ready && list < SPARE_LISTS; list++) {
        while (spare_heads[list] != SPARE_NONE) {
            unsigned short i = spare_heads[list];
            unmap_guarded(spares[i].mapping.base, spares[i].mapping.len);
            bytes += spares[i].mapping.len;
            held_bytes -= spares[i].mapping.held;
            spare_kept_bytes -= kept_bytes_of(&spares[i].mapping);
            spare_heads[list] = spares[i].next;
            spares[i].next = spare_unused;
            spare_unused = i;
        }
    }
    harden_leaf_unlock(&guard_lock);
    return bytes;
}

void harden_guard_fork_lock(void) { guard_lock_held_before_fork = harden_leaf_fork_lock(&guard_lock); }
void harden_guard_fork_unlock(int in_child) {
    harden_leaf_fork_unlock(&guard_lock, guard_lock_held_before_fork, in_child);
}

int harden_guarded_free(void *p) { return guarded_free(p, 0); }

/* harden_guarded_free; `emptied`: its pages were moved away (a move), so
 * there is nothing to keep or hold, and its mapping is dropped. */
static int guarded_free(void *p, int emptied) {
    /* From a signal handler inside the table's section, the table cannot be
     * read: the block, guarded or large, is left to the program's end. */
    if (harden_leaf_reentered(&guard_lock))
        return 1;
    int saved_errno = errno; /* free never changes errno (POSIX 2024; glibc's tst-free-errno) */
    harden_leaf_lock(&guard_lock);
    guard_entry *e = find((uintptr_t)p);
    guard_mapping gone = {0, 0, 0, 0, 0};
    if (e != NULL) {
        uintptr_t first = e->user & ~(uintptr_t)(os_page_size() - 1), end = e->user + e->usable;
        gone = (guard_mapping){e->base, e->len, 0, 0, 0};
        if (!emptied && end - first <= HARDEN_GUARD_KEEP_BYTES)
            gone.first = first, gone.end = end;
        else if (!emptied && held_bytes + (end - first) <= HARDEN_GUARD_HOLD_BYTES)
            gone.held = end - first, held_bytes += gone.held;
        e->user = GUARD_GONE;
        live--;
        live_usable_bytes -= e->usable;
        live_page_bytes -= end - first;
    }
    harden_leaf_unlock(&guard_lock);
    if (e == NULL)
        return 0;
    /* A small block is zeroed and stays mapped (no system call: a read
     * after free sees zeros, a write is found when it leaves the
     * quarantine); a bigger one becomes no-access: held, its pages kept
     * (the malloc that reuses them zeroes them, no fault a page), or its
     * memory dropped by a fresh no-access mapping in its place, which
     * keeps the addresses ours. */
    if (gone.end != 0)
        clear_written(gone.first, gone.end);
    else if (gone.held == 0 || mprotect((void *)gone.base, gone.len, PROT_NONE) != 0) {
        if (mmap((void *)gone.base, gone.len, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) == MAP_FAILED)
            mprotect((void *)gone.base, gone.len, PROT_NONE);
    }
    harden_leaf_lock(&guard_lock);
    guard_mapping oldest = quarantine[quarantine_next];
    quarantine[quarantine_next] = gone;
    quarantine_next = (quarantine_next + 1) % HARDEN_GUARD_QUARANTINE;
    harden_leaf_unlock(&guard_lock);
    if (oldest.len == 0) {
        errno = saved_errno;
        return 1;
    }
    check_still_zero(&oldest);
    harden_leaf_lock(&guard_lock); /* out of the quarantine: a spare, if one is unused */
    oldest = spare_put(oldest);
    harden_leaf_unlock(&guard_lock);
    if (oldest.len != 0)
        unmap_guarded(oldest.base, oldest.len);
    errno = saved_errno;
    return 1;
}

#else
/* Nothing: ISO C wants a translation unit to declare something. */
typedef int harden_guard_unused_in_default_builds;
#endif /* HC_HARDENED */
