/* common/fd_out.h — text output with neither stdio nor malloc: a fixed
 * buffer (on the caller's stack) flushed with write(2). For what the
 * allocator writes about itself (the heap map, the trace), which must not
 * allocate: the allocator may be the process's malloc.
 * May touch: write(2). */
#ifndef HC_FD_OUT_H_
#define HC_FD_OUT_H_

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

typedef struct hc_fd_out {
    int fd;
    int failed; /* errno of the first failed write; nothing is written after it */
    size_t len;
    char buf[4096];
} hc_fd_out;

static inline void fd_out_flush(hc_fd_out *o) {
    for (size_t done = 0; done < o->len && !o->failed;) {
        ssize_t n = write(o->fd, o->buf + done, o->len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            o->failed = n < 0 ? errno : EIO;
        else
            done += (size_t)n;
    }
    o->len = 0;
}

static inline void fd_out_put(hc_fd_out *o, const char *s) {
    for (; *s; s++) {
        if (o->len == sizeof o->buf)
            fd_out_flush(o);
        o->buf[o->len++] = *s;
    }
}

/* `v` in decimal. */
static inline void fd_out_put_u(hc_fd_out *o, uint64_t v) {
    char text[24];
    int n = 23;
    text[n] = '\0';
    do {
        text[--n] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    fd_out_put(o, text + n);
}

/* Flushes what is left; returns 0, or -1 with errno from the first failed write. */
static inline int fd_out_finish(hc_fd_out *o) {
    fd_out_flush(o);
    if (o->failed) {
        errno = o->failed;
        return -1;
    }
    return 0;
}

#endif /* HC_FD_OUT_H_ */
