/* common/fatal.c — one-line reports on stderr without touching malloc. */
#include "common/fatal.h"

#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/fd_out.h"

void hc_fatal_pointer(const char *what, const void *addr) { hc_fatal_pointer_why(what, addr, NULL); }

void hc_fatal_pointer_why(const char *what, const void *addr, const char *why) {
    hc_fd_out o = HC_FD_OUT_INIT(STDERR_FILENO);
    fd_out_put(&o, "hcmalloc: ");
    fd_out_put(&o, what);
    fd_out_put(&o, " ");
    fd_out_put_hex(&o, (uintptr_t)addr);
    if (why != NULL) {
        fd_out_put(&o, " (");
        fd_out_put(&o, why);
        fd_out_put(&o, ")");
    }
    fd_out_put(&o, "\n");
    fd_out_finish(&o);
    abort();
}

void hc_fatal(const char *message) {
    hc_warn(message);
    abort();
}

void hc_warn(const char *message) {
    hc_fd_out o = HC_FD_OUT_INIT(STDERR_FILENO);
    fd_out_put(&o, "hcmalloc: ");
    fd_out_put(&o, message);
    fd_out_put(&o, "\n");
    fd_out_finish(&o);
}
