/* stage4_reclaim/leak_check_program.c — a heap with one reachable and one
 * unreachable allocation site, for :leak_check_test: 200 blocks of 1 MiB
 * kept in a global array to the end (keep_in_global), and 50 of 1 MiB lost
 * by `leaky`. Both functions are static and the program is not linked
 * -rdynamic: the loader knows neither name, only the file's .symtab does.
 * A plain program on glibc's malloc until LD_PRELOAD puts the profiler
 * library under it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK_BYTES (1 << 20)
#define KEPT_BLOCKS 200
#define LEAKED_BLOCKS 50

static char *kept[KEPT_BLOCKS];

__attribute__((noinline)) static void keep_in_global(void) {
    for (int i = 0; i < KEPT_BLOCKS; i++) {
        kept[i] = malloc(BLOCK_BYTES);
        memset(kept[i], 1, 64);
    }
}

/* Each block's address lives only in this frame, which is gone by exit. */
__attribute__((noinline)) static void leaky(void) {
    for (int i = 0; i < LEAKED_BLOCKS; i++) {
        char *volatile block = malloc(BLOCK_BYTES);
        block[0] = 1;
    }
}

int main(void) {
    keep_in_global();
    leaky();
    int sum = 0; /* read back, so that the compiler keeps the array */
    for (int i = 0; i < KEPT_BLOCKS; i++)
        sum += kept[i][0];
    printf("leak_check_program: %d MiB kept in a global array, %d MiB leaked\n", sum, LEAKED_BLOCKS);
    return 0;
}
