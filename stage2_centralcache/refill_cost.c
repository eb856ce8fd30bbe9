/* stage2_centralcache/refill_cost.c — a loop that makes the thread cache
 * refill from the central cache again and again, so callgrind can count
 * what one refill costs: `bazel build --config=opt
 * //stage2_centralcache:refill_cost`, then `valgrind --tool=callgrind` on it. */
#include "common/hcmalloc.h"

#define OBJECTS 3200
#define ROUNDS  100

static void *objects[OBJECTS];

int main(void) {
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < OBJECTS; i++)
            objects[i] = hc_malloc(64);
        for (int i = 0; i < OBJECTS; i++)
            hc_free_sized(objects[i], 64);
        hc_thread_flush(); /* so the next round refills from the central cache */
    }
    return 0;
}
