/* stage4_reclaim/checks/link_check.c — a C program linked with -lhcmalloc (static
 * or shared, link_test.sh builds it both ways, as docs/dropin.md's recipe
 * says): malloc must be hcmalloc's, with no LD_PRELOAD. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hcmalloc.h"

int main(void) {
    size_t before = 0, after = 0;
    if (!hc_get_property("generic.current_allocated_bytes", &before))
        return printf("link_check.c: FAIL: no generic.current_allocated_bytes\n"), 1;
    char *big = malloc(1 << 20);
    memset(big, 1, 1 << 20);
    hc_get_property("generic.current_allocated_bytes", &after);
    void *p = malloc(33);
    size_t usable = malloc_usable_size(p); /* 48 under hcmalloc, 40 under glibc */
    int ok = usable == 48 && after >= before + (1 << 20) && strcmp(hc_stage_name(), "stage4_reclaim") == 0;
    printf("link_check.c: %s: %s, usable(malloc(33)) = %zu, in use %zu -> %zu after malloc(1 MiB)\n",
           ok ? "PASS" : "FAIL", hc_stage_name(), usable, before, after);
    free(p);
    free(big);
    return ok ? 0 : 1;
}
