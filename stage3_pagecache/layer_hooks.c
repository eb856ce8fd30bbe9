/* stage3_pagecache/layer_hooks.c — layer 3's definitions of the hooks its
 * malloc.c calls (layer_hooks.h): nothing to do before stage 4.
 * May touch: nothing. */
#include "stage3_pagecache/layer_hooks.h"

void hc_layer_on_malloc_slow(void) {}

/* Stage 4 adds returning memory to the OS; nothing to do before it. */
void hc_layer_release_free_memory(void) {}
