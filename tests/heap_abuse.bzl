"""hc_heap_abuse_tests: tests/heap_abuse_test.cc against a stage, twice.

`heap_abuse_test` runs the how2heap-style set (docs/design.md, section 6)
on the stage as built: what the default build catches and survives.
`heap_abuse_hardened_test` runs the same binary built hardened
(HC_HARDENED=1, common/harden.h), which must stop every case.
"""

load("//tests:flavours.bzl", "hardened_test")
load("//tools/config:defs.bzl", "skip_under")

_SKIPS = {
    "asan": "HC_ASAN poisons free objects: ASan reports the program's write after free before the allocator can (checker_reports_asan_test)",
    "debug": "HC_DEBUG stops every double free at the call with its own message (bad_input_debug_test)",
}

def hc_heap_abuse_tests(stage):
    """The two heap_abuse tests in the calling package, against `stage`."""
    deps = [
        "//tests:heap_abuse",
        stage,
        "@googletest//:gtest_main",
    ]
    native.cc_test(
        name = "heap_abuse_test",
        size = "small",
        deps = deps,
        target_compatible_with = skip_under(_SKIPS),
    )
    native.cc_binary(
        name = "heap_abuse_test_bin",
        testonly = True,
        deps = deps,
    )
    # Medium: its guarded-block tests map and unmap thousands of mappings,
    # past small's 60 s under ThreadSanitizer on the project's machine.
    hardened_test(
        name = "heap_abuse_hardened_test",
        size = "medium",
        binary = ":heap_abuse_test_bin",
        target_compatible_with = skip_under(_SKIPS),
    )
