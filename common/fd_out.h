/* common/fd_out.h — text output with neither stdio nor malloc: a fixed
 * buffer (on the caller's stack) flushed with write(2), or into a caller's
 * string. For everything the allocator writes about itself (fatal messages,
 * the lock watchdog, the stats report, the heap map, the trace), which must
 * not allocate: the allocator may be the process's malloc.
 * May touch: write(2). */
#ifndef HC_FD_OUT_H_
#define HC_FD_OUT_H_

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

typedef struct hc_fd_out {
    int fd;     /* -1: the text goes to `text` instead (fd_out_to_string) */
    int failed; /* errno of the first failed write; nothing is written after it */
    size_t len;
    char *text;             /* fd == -1: the caller's string, always NUL-terminated */
    size_t text_size, text_len;
    char buf[4096];
} hc_fd_out;

/* An output to file descriptor `fd`. */
#define HC_FD_OUT_INIT(fd) { (fd), 0, 0, NULL, 0, 0, {0} }

/* An output into `text` (`size` bytes, size > 0): what does not fit is cut. */
static inline void fd_out_to_string(hc_fd_out *o, char *text, size_t size) {
    o->fd = -1;
    o->failed = 0;
    o->len = 0;
    o->text = text;
    o->text_size = size;
    o->text_len = 0;
    text[0] = '\0';
}

static inline void fd_out_flush(hc_fd_out *o) {
    if (o->fd < 0) {
        for (size_t i = 0; i < o->len && o->text_len + 1 < o->text_size; i++)
            o->text[o->text_len++] = o->buf[i];
        o->text[o->text_len] = '\0';
        o->len = 0;
        return;
    }
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

/* `v` in decimal, right-aligned in `width` characters. */
static inline void fd_out_put_u_width(hc_fd_out *o, uint64_t v, int width) {
    int digits = 1;
    for (uint64_t rest = v / 10; rest != 0; rest /= 10)
        digits++;
    for (; width > digits; width--)
        fd_out_put(o, " ");
    fd_out_put_u(o, v);
}

/* `scaled` / 10^decimals with that many decimals (decimals <= 3): 1234 with
 * 2 decimals is "12.34". */
static inline void fd_out_put_fixed(hc_fd_out *o, uint64_t scaled, unsigned decimals) {
    uint64_t unit = 1;
    for (unsigned i = 0; i < decimals; i++)
        unit *= 10;
    fd_out_put_u(o, scaled / unit);
    if (decimals == 0)
        return;
    char frac[5] = {'.'};
    for (unsigned i = decimals; i > 0; i--, scaled /= 10)
        frac[i] = (char)('0' + scaled % 10);
    frac[decimals + 1] = '\0';
    fd_out_put(o, frac);
}

/* `v` as "0x" and lowercase hex digits, no leading zeros. */
static inline void fd_out_put_hex(hc_fd_out *o, uint64_t v) {
    char text[2 + 16 + 1];
    int i = (int)sizeof text - 1;
    text[i] = '\0';
    do {
        text[--i] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v != 0);
    text[--i] = 'x';
    text[--i] = '0';
    fd_out_put(o, text + i);
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
