/* stage4_reclaim/profile_leak.c — layer 4, the heap profiler: the leak
 * check at exit (HCMALLOC_LEAK_CHECK=1, or 2 to list the reachable blocks
 * too). The sampled blocks still live that nothing reachable points to
 * (leak_scan.h) are reported on stderr stack by stack, biggest estimate
 * first, named from the objects' symbol tables (elf_symbols.h), and written
 * as a profile for google-pprof.
 * May touch: the sample table (under both its locks), leak_scan.h,
 * elf_symbols.h, common/os.h (the scan's arrays), profile_writer.c. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/fatal.h"
#include "common/fd_out.h"
#include "common/lock.h"
#include "common/os.h"
#include "stage4_reclaim/elf_symbols.h"
#include "stage4_reclaim/leak_scan.h"
#include "stage4_reclaim/profile_internal.h"

/* The program's own path (the loader calls it ""), for frames and pprof. */
static const char *program_path(void) {
    static char path[4096];
    if (path[0] == '\0') {
        ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
        if (n <= 0)
            return "PROGRAM";
        path[n] = '\0';
    }
    return path;
}

/* "name+0x12 (file)" where a symbol covers the address (the file's own
 * symbol table first: elf_symbols.h), else the file and the address in it;
 * pprof on the leak profile adds the lines. */
static void put_frame(hc_fd_out *o, uintptr_t pc) {
    elf_symbol sym;
    fd_out_put(o, "    ");
    fd_out_put_hex(o, pc);
    if (elf_symbol_of(pc, &sym)) {
        fd_out_put(o, " ");
        if (sym.name != NULL) {
            fd_out_put(o, sym.name);
            fd_out_put(o, "+");
            fd_out_put_hex(o, sym.offset);
        } else {
            fd_out_put_hex(o, sym.file_offset);
        }
        fd_out_put(o, " (");
        fd_out_put(o, sym.file[0] != '\0' ? sym.file : program_path());
        fd_out_put(o, ")");
    }
    fd_out_put(o, "\n");
}

/* The live blocks by address, for the scan's binary search: a heap sort
 * (no libc qsort: glibc's may call malloc), n log n for the hundred
 * thousand blocks of a run that samples everything. */
static void sift_down(leak_block *a, size_t root, size_t n) {
    for (;;) {
        size_t child = 2 * root + 1;
        if (child >= n)
            return;
        if (child + 1 < n && a[child + 1].start > a[child].start)
            child++;
        if (a[root].start >= a[child].start)
            return;
        leak_block t = a[root];
        a[root] = a[child];
        a[child] = t;
        root = child;
    }
}

static void sort_by_address(leak_block *a, size_t n) {
    for (size_t i = n / 2; i-- > 0;)
        sift_down(a, i, n);
    for (size_t end = n; end-- > 1;) {
        leak_block t = a[0];
        a[0] = a[end];
        a[end] = t;
        sift_down(a, 0, end);
    }
}

static double estimated_bytes(const bucket *b, size_t samples_of_it) {
    return (double)samples_of_it * profile_weight(b->size) * (double)b->size;
}

/* The buckets with leaked (or, `reachable`, reachable) samples into `out`,
 * biggest estimate first: a report a user reads from the top. Insertion
 * sort: distinct stacks and sizes are few next to blocks. */
static size_t ranked_buckets(bucket **out, size_t room, int reachable) {
    size_t count = 0;
    FOR_EACH_BUCKET(st, b) {
        size_t k = reachable ? b->reachable : b->leaked;
        if (k == 0 || count == room)
            continue;
        double key = estimated_bytes(b, k);
        size_t at = count++;
        for (; at > 0; at--) {
            bucket *prev = out[at - 1];
            if (estimated_bytes(prev, reachable ? prev->reachable : prev->leaked) >= key)
                break;
            out[at] = prev;
        }
        out[at] = b;
    }
    return count;
}

static void put_entry(hc_fd_out *o, const char *kind, const bucket *b, size_t k) {
    double w = profile_weight(b->size);
    fd_out_put(o, "  ");
    fd_out_put(o, kind);
    fd_out_put(o, ": ~");
    fd_out_put_u(o, (uint64_t)(estimated_bytes(b, k) + 0.5));
    fd_out_put(o, " bytes in ~");
    fd_out_put_u(o, (uint64_t)(k * w + 0.5));
    fd_out_put(o, " blocks of ");
    fd_out_put_u(o, b->size);
    fd_out_put(o, " bytes (");
    fd_out_put_u(o, k);
    fd_out_put(o, " sampled), allocated at:\n");
    for (int i = 0; i < b->stack->depth; i++)
        put_frame(o, b->stack->pcs[i]);
}

/* "~B bytes in ~N blocks", summed over every bucket. */
static void put_total(hc_fd_out *o, int reachable, size_t *samples_out) {
    double blocks = 0, bytes = 0;
    size_t k_total = 0;
    FOR_EACH_BUCKET(st, b) {
        size_t k = reachable ? b->reachable : b->leaked;
        k_total += k;
        blocks += (double)k * profile_weight(b->size);
        bytes += estimated_bytes(b, k);
    }
    fd_out_put(o, "~");
    fd_out_put_u(o, (uint64_t)(bytes + 0.5));
    fd_out_put(o, " bytes in ~");
    fd_out_put_u(o, (uint64_t)(blocks + 0.5));
    fd_out_put(o, " blocks");
    *samples_out = k_total;
}

/* Where the leaks' profile goes: PREFIX.<pid>.leak.heap with
 * HCMALLOC_PROFILE, else $TMPDIR (or /tmp)/hcmalloc.<pid>.leak.heap, as
 * gperftools' heap checker writes its own to /tmp. */
static int leak_profile_path(char *path, size_t size) {
    if (profile_path("leak", path, size) == 0)
        return 0;
    const char *dir = getenv("TMPDIR");
    char prefix[4096];
    hc_fd_out p = {.fd = -1};
    fd_out_to_string(&p, prefix, sizeof prefix);
    fd_out_put(&p, dir != NULL && dir[0] == '/' ? dir : "/tmp");
    fd_out_put(&p, "/hcmalloc");
    fd_out_flush(&p);
    return profile_path_with(prefix, "leak", path, size);
}

/* HCMALLOC_LEAK_CHECK: the live sampled blocks at exit, split by the scan
 * (leak_scan.h) into leaked and reachable; the leaks reported stack by
 * stack, biggest first (level 2: the reachable ones too), and written as a
 * profile for google-pprof. The scan runs under both profile locks (no
 * sample taken, none freed under it: profile_blocks_lock); the report after it,
 * without them (it asks the loader for names, and the loader's lock comes
 * first). */
void profile_leak_check(int level, const void *stack_from) {
    static leak_roots roots; /* 8 KiB: not on the stack the scan reads */
    leak_collect_roots(&roots);
    hc_lock_acquire(&profile_lock);
    hc_lock_acquire(&profile_blocks_lock);
    size_t n = 0;
    for (const sampled_block *r = profile_live_blocks; r != NULL; r = r->next)
        n++;
    size_t map_bytes = n * (sizeof(leak_block) + sizeof(size_t));
    map_bytes = (map_bytes + os_page_size() - 1) & ~(os_page_size() - 1);
    leak_block *blocks = n > 0 ? os_map(map_bytes) : NULL;
    if (n > 0 && blocks == NULL) {
        hc_lock_unlock(&profile_blocks_lock);
        hc_lock_unlock(&profile_lock);
        hc_warn("leak check: no memory for the scan");
        return;
    }
    size_t *work = (size_t *)(blocks + n);
    size_t i = 0;
    for (const sampled_block *r = profile_live_blocks; r != NULL; r = r->next, i++) {
        size_t size = r->bucket->size;
        blocks[i] = (leak_block){.start = r->start, .end = r->start + (size == 0 ? 1 : size), .owner = r->bucket};
    }
    sort_by_address(blocks, n);
    FOR_EACH_BUCKET(st, b) {
        b->leaked = 0;
        b->reachable = 0;
    }
    leak_scan(blocks, n, work, &roots, stack_from);
    for (i = 0; i < n; i++) {
        bucket *b = blocks[i].owner;
        if (blocks[i].reachable)
            b->reachable++;
        else
            b->leaked++;
    }
    size_t total_samples = profile_samples;
    hc_lock_unlock(&profile_blocks_lock);
    hc_lock_unlock(&profile_lock);

    hc_fd_out o = {.fd = STDERR_FILENO};
    fd_out_put(&o, "hcmalloc: leak check: ");
    size_t leaked_samples = 0, reachable_samples = 0;
    if (n == 0) {
        fd_out_put(&o, "no sampled block is live at exit (");
        fd_out_put_u(&o, total_samples);
        fd_out_put(&o, " sampled, 1 in ");
        fd_out_put_u(&o, profile_sample_bytes());
        fd_out_put(&o, " bytes)\n");
    } else {
        put_total(&o, 0, &leaked_samples);
        fd_out_put(&o, " leaked (");
        fd_out_put_u(&o, leaked_samples);
        fd_out_put(&o, " sampled blocks that nothing reachable points to), ");
        put_total(&o, 1, &reachable_samples);
        fd_out_put(&o, " still reachable (");
        fd_out_put_u(&o, reachable_samples);
        fd_out_put(&o, level >= 2 ? " sampled, listed after the leaks" : " sampled, not listed: HCMALLOC_LEAK_CHECK=2 lists them");
        fd_out_put(&o, "); 1 in ");
        fd_out_put_u(&o, profile_sample_bytes());
        fd_out_put(&o, " bytes sampled\n");
        if (roots.truncated)
            fd_out_put(&o, "hcmalloc: leak check: too many loaded objects: some data segments were not scanned\n");
        /* The blocks' memory is done with: it holds the ranking now. */
        bucket **ranked = (bucket **)blocks;
        size_t room = map_bytes / sizeof *ranked;
        size_t count = ranked_buckets(ranked, room, 0);
        for (i = 0; i < count; i++)
            put_entry(&o, "leak", ranked[i], ranked[i]->leaked);
        if (level >= 2) {
            count = ranked_buckets(ranked, room, 1);
            for (i = 0; i < count; i++)
                put_entry(&o, "reachable", ranked[i], ranked[i]->reachable);
        }
    }
    char path[4096];
    if (leaked_samples > 0 && leak_profile_path(path, sizeof path) == 0) {
        profile_write_to(path, 1);
        fd_out_put(&o, "hcmalloc: leak check: every frame with its line: google-pprof --text --lines ");
        fd_out_put(&o, program_path());
        fd_out_put(&o, " ");
        fd_out_put(&o, path);
        fd_out_put(&o, "\n");
    }
    fd_out_finish(&o);
    if (blocks != NULL)
        os_unmap(blocks, map_bytes);
}
