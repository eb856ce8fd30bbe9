"""The allocators the bench builds itself. Adding a stage is one line here.

BENCH_STAGES: each entry is a stage's package; the bench links its
`//<package>:hcmalloc` library into a build of bench_driver.c of its own
(bench/defs.bzl), which calls hc_malloc / hc_free_sized. These rows are
labelled "sized API, linked in": they teach what each layer buys, but they
are not the work glibc and the peers do (a sized free, no PLT call).

BENCH_PRELOAD_LIBS: drop-in libraries that replace malloc itself, by the
name the tables give them. The bench runs them like the peers: the plain
driver (malloc / free) with LD_PRELOAD, so stage 4's unsized free() is
measured through the same calls as glibc's. These are the headline rows.
"""

BENCH_STAGES = [
    "stage1_threadcache",
    "stage2_centralcache",
    "stage3_pagecache",
    "stage4_reclaim",
]

BENCH_PRELOAD_LIBS = {
    "stage4_dropin": "//stage4_reclaim:libhcmalloc.so",
}
