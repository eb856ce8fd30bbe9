/* stage4_reclaim/profile_maps.c — layer 4, the heap profiler: the
 * MAPPED_LIBRARIES section of a profile, /proc/self/maps, read with read(2)
 * in pieces (no buffer to grow) and kept between dumps.
 * May touch: common/os.h (the kept copy), common/fd_out.h, the loader's
 * dl_iterate_phdr (a count of the objects it loaded). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

#include "common/fd_out.h"
#include "common/lock.h"
#include "common/os.h"
#include "stage4_reclaim/profile_internal.h"

/* /proc/self/maps, copied in pieces through the output's buffer. */
static void put_maps_uncached(hc_fd_out *o) {
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    fd_out_flush(o);
    for (;;) {
        ssize_t n = read(fd, o->buf, sizeof o->buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        o->len = (size_t)n;
        fd_out_flush(o);
    }
    close(fd);
}

/* The MAPPED_LIBRARIES section, kept between dumps: the kernel walks every
 * mapping to write /proc/self/maps (a tenth of an interval dump's time on
 * the bench), and the lines pprof reads, the code of the program and its
 * libraries, change only when the loader adds or removes an object, which
 * dl_iterate_phdr counts. Its anonymous lines may then be stale; pprof
 * ignores them. Under profile_maps_lock, taken by dumps alone and never
 * around a loader call (the loader holds its lock while it calls malloc). */
hc_lock profile_maps_lock = HC_LOCK_INITIALIZER;
static char *maps_text; /* os_map'd */
static size_t maps_len, maps_capacity;
static unsigned long long maps_loads = ~0ull; /* dlpi_adds + dlpi_subs when read; none yet */

static int read_load_count(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    *(unsigned long long *)data = info->dlpi_adds + info->dlpi_subs;
    return 1; /* the first object says it all */
}

/* Reads /proc/self/maps into maps_text, growing it; 0, or -1 (no memory). */
static int refresh_maps_locked(void) {
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    maps_len = 0;
    for (;;) {
        if (maps_capacity - maps_len < 4096) {
            size_t bigger = maps_capacity == 0 ? 64 << 10 : maps_capacity * 2;
            char *text = os_map(bigger);
            if (text == NULL) {
                close(fd);
                return -1;
            }
            if (maps_text != NULL) {
                memcpy(text, maps_text, maps_len);
                os_unmap(maps_text, maps_capacity);
            }
            maps_text = text;
            maps_capacity = bigger;
        }
        ssize_t n = read(fd, maps_text + maps_len, maps_capacity - maps_len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        maps_len += (size_t)n;
    }
    close(fd);
    return 0;
}

void profile_put_maps(hc_fd_out *o) {
    unsigned long long loads = 0;
    dl_iterate_phdr(read_load_count, &loads); /* before profile_maps_lock: the loader's lock */
    hc_lock_acquire(&profile_maps_lock);
    if (loads != maps_loads)
        maps_loads = refresh_maps_locked() == 0 ? loads : ~0ull;
    if (maps_loads == ~0ull) {
        hc_lock_unlock(&profile_maps_lock);
        put_maps_uncached(o);
        return;
    }
    for (size_t done = 0; done < maps_len;) {
        size_t piece = maps_len - done;
        if (piece > sizeof o->buf - o->len)
            piece = sizeof o->buf - o->len;
        memcpy(o->buf + o->len, maps_text + done, piece);
        o->len += piece;
        done += piece;
        if (o->len == sizeof o->buf)
            fd_out_flush(o);
    }
    fd_out_flush(o);
    hc_lock_unlock(&profile_maps_lock);
}
