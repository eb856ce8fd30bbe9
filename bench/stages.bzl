"""The allocators the bench builds itself. Adding a stage is one line here.

BENCH_STAGES: each entry is a stage's package; the bench links its
`//<package>:hcmalloc` library into a build of bench_driver.c of its own
(bench/defs.bzl), which calls hc_malloc / hc_free_sized.

BENCH_PRELOAD_LIBS: drop-in libraries that replace malloc itself. The bench
runs them like the peers: the plain driver (malloc / free) with LD_PRELOAD.
Stage 4's libhcmalloc.so goes here when it lands, e.g.
    "stage4_preload": "//stage4_reclaim:libhcmalloc.so",
so its unsized free() is measured through the same calls glibc's is.
"""

BENCH_STAGES = [
    "stage1_threadcache",
    "stage2_centralcache",
    "stage3_pagecache",
    "stage4_reclaim",
]

BENCH_PRELOAD_LIBS = {
}
