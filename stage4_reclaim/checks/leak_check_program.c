/* stage4_reclaim/checks/leak_check_program.c — a heap with reachable and
 * unreachable allocation sites, for :leak_check_test: 200 blocks of 1 MiB
 * kept in a global array to the end (keep_in_global), and 50 of 1 MiB lost
 * by `leaky`. Reachable the other ways the leak check's scan looks: 20 of
 * 1 MiB through a small block a global points to (keep_behind_pointer),
 * 10 of 1 MiB from the stack of the function that calls exit
 * (exit_holding_on_stack). The functions are static and the program is not
 * linked -rdynamic: the loader knows none of their names, only the file's
 * .symtab does.
 * A plain program on glibc's malloc until LD_PRELOAD puts the profiler
 * library under it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK_BYTES (1 << 20)
#define KEPT_BLOCKS 200
#define LEAKED_BLOCKS 50
#define BEHIND_POINTER_BLOCKS 20
#define ON_STACK_BLOCKS 10

static char *kept[KEPT_BLOCKS];

/* A small block (too small to be sampled, at the default rate) holding
 * the only addresses of big ones. */
struct holder {
    char *blocks[BEHIND_POINTER_BLOCKS];
};
static struct holder *holder;

__attribute__((noinline)) static void keep_in_global(void) {
    for (int i = 0; i < KEPT_BLOCKS; i++) {
        kept[i] = malloc(BLOCK_BYTES);
        memset(kept[i], 1, 64);
    }
}

__attribute__((noinline)) static void keep_behind_pointer(void) {
    holder = malloc(sizeof *holder);
    for (int i = 0; i < BEHIND_POINTER_BLOCKS; i++) {
        holder->blocks[i] = malloc(BLOCK_BYTES);
        holder->blocks[i][0] = 1;
    }
}

/* exit() from here: this frame is live while the leak check runs. */
__attribute__((noinline, noreturn)) static void exit_holding_on_stack(void) {
    char *volatile held[ON_STACK_BLOCKS];
    for (int i = 0; i < ON_STACK_BLOCKS; i++)
        held[i] = malloc(BLOCK_BYTES);
    held[0][0] = 1;
    exit(0);
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
    keep_behind_pointer();
    leaky();
    int sum = 0; /* read back, so that the compiler keeps the array */
    for (int i = 0; i < KEPT_BLOCKS; i++)
        sum += kept[i][0];
    printf("leak_check_program: %d MiB kept in a global array, %d MiB behind a pointer, %d MiB on the "
           "stack, %d MiB leaked\n",
           sum, BEHIND_POINTER_BLOCKS, ON_STACK_BLOCKS, LEAKED_BLOCKS);
    fflush(stdout);
    exit_holding_on_stack();
}
