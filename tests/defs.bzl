"""hc_stage_tests: the shared test suite, instantiated once per stage.

A stage's BUILD calls `hc_stage_tests(stage = ":hcmalloc")` and gets, in its
own package:
  conformance_test       the API contract of docs/design.md, and memory
                         accounting after every test (accounting_test.cc)
  stress_test            threads, random sizes, cross-thread frees, patterns
  stress_test_tsan       the stress test with the stage built under TSan
  stress_test_asan       the stress test built under ASan, free memory
                         poisoned (common/track.h)
  stress_test_valgrind   the stress test under valgrind memcheck, with every
                         block announced to it (common/track.h)
  race_test_tsan         stats and flushes while other threads allocate,
                         under TSan (tests/race_test.cc)
  false_sharing_test     two fresh threads' first objects of a small class
                         share no cache line (tests/false_sharing_test.cc)
and the reliability checks of tests/reliability.bzl, so
`bazel test //stageN_x:all` runs every flavour with no flags.
"""

load("//tests:flavours.bzl", "flavour_test")
load("//tests:reliability.bzl", "hc_reliability_tests")
load("//tools/config:defs.bzl", "skip_under")

def hc_stage_tests(stage, stress_env = {}, valgrind_env = {}, internal_libs = []):
    """Instantiates the shared suite against `stage` (a cc_library label).

    Args:
      stage: the stage's allocator library, exporting the hc_* API.
      stress_env: extra environment for the plain and TSan stress runs.
      valgrind_env: extra environment for the Valgrind run.
      internal_libs: the stage's other allocator libraries, whose globals
        symbols_test checks too.
    """
    # Every global the stage's archives (and common's) define is public API
    # or hidden, and local once localized (tests/symbols_test.sh).
    # (A filegroup: a cc_library's runfiles leave its archive out.)
    native.filegroup(
        name = "symbols_test_archives",
        testonly = True,
        srcs = [stage, "//common"] + internal_libs,
    )
    native.sh_test(
        name = "symbols_test",
        size = "small",
        srcs = ["//tests:symbols_test.sh"],
        args = ["$(locations :symbols_test_archives)"],
        data = [":symbols_test_archives"],
    )

    native.cc_test(
        name = "conformance_test",
        size = "small",
        env = {"HC_EXPECTED_STAGE": native.package_name()},
        deps = [
            "//tests:accounting",
            "//tests:conformance",
            stage,
            "@googletest//:gtest_main",
        ],
    )

    native.cc_binary(
        name = "stress_test_bin",
        testonly = True,
        deps = [
            "//tests:stress",
            stage,
            "@googletest//:gtest_main",
        ],
    )

    # Under --config=asan or --config=tsan this test would repeat its
    # flavour below (stress_test_asan, stress_test_tsan: built with that
    # sanitizer in any configuration) at several times the operations:
    # under --config=tsan, stage 1's and stage 2's took 315 s and 302 s on
    # the project's 2-core machine, the longest tests of that run.
    native.cc_test(
        name = "stress_test",
        size = "large",
        deps = [
            "//tests:stress",
            stage,
            "@googletest//:gtest_main",
        ],
        env = stress_env,
        target_compatible_with = skip_under({
            "asan": "stress_test_asan is this test under ASan, sized for it",
            "tsan": "stress_test_tsan is this test under TSan, sized for it",
        }),
    )

    # The sanitizer flavours: fewer operations, as each costs several times more.
    for flavour, ops in [("tsan", "30000"), ("asan", "50000")]:
        flavour_test(
            name = "stress_test_" + flavour,
            size = "large",
            flavour = flavour,
            binary = ":stress_test_bin",
            test_env = dict({"HC_STRESS_OPS": ops}, **stress_env),
        )

    flavour_test(
        name = "stress_test_valgrind",
        size = "large",
        flavour = "valgrind",
        binary = ":stress_test_bin",
        runner = "//tests:valgrind_runner",
        test_env = dict({
            "HC_STRESS_THREADS": "4",
            "HC_STRESS_OPS": "15000",
        }, **valgrind_env),
    )

    native.cc_binary(
        name = "race_test_bin",
        testonly = True,
        deps = [
            "//tests:race",
            stage,
            "@googletest//:gtest_main",
        ],
    )

    flavour_test(
        name = "race_test_tsan",
        size = "medium",
        flavour = "tsan",
        binary = ":race_test_bin",
    )

    # Its own binary: each case forks a child in which the allocator has
    # handed out nothing yet.
    native.cc_test(
        name = "false_sharing_test",
        size = "small",
        deps = [
            "//tests:false_sharing",
            stage,
            "@googletest//:gtest_main",
        ],
    )

    hc_reliability_tests(stage = stage)
