/* common/fatal.c — one-line reports on stderr without touching malloc. */
#include "common/fatal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void write_all(const char *s, size_t n) {
    while (n > 0) {
        ssize_t w = write(STDERR_FILENO, s, n);
        if (w <= 0) return;
        s += w;
        n -= (size_t)w;
    }
}

static void write_str(const char *s) { write_all(s, strlen(s)); }

void hc_fatal_pointer(const char *what, const void *addr) { hc_fatal_pointer_why(what, addr, NULL); }

void hc_fatal_pointer_why(const char *what, const void *addr, const char *why) {
    char hex[2 + 16 + 1];
    uintptr_t v = (uintptr_t)addr;
    int i = (int)sizeof hex - 1;
    hex[i] = '\0';
    do {
        hex[--i] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v != 0);
    hex[--i] = 'x';
    hex[--i] = '0';
    write_str("hcmalloc: ");
    write_str(what);
    write_str(" ");
    write_str(hex + i);
    if (why != NULL) {
        write_str(" (");
        write_str(why);
        write_str(")");
    }
    write_str("\n");
    abort();
}

void hc_fatal(const char *message) {
    hc_warn(message);
    abort();
}

void hc_warn(const char *message) {
    write_str("hcmalloc: ");
    write_str(message);
    write_str("\n");
}
