"""hc_reliability_tests: the checks that try hard to break a stage.

hc_stage_tests (defs.bzl) calls this for every stage, which gets, in its own
package:
  checker_reports_valgrind_test  tests/misuse.c's mistakes (use after free,
                                 double free, overflows, a leak) each reported
                                 by memcheck, and none for a clean run
  checker_reports_asan_test      the same mistakes under AddressSanitizer
                                 (use after free and overflows)
  bad_input_test                 impossible requests and invalid frees
  bad_input_debug_test           the same in a debug build (HC_DEBUG=1), where
                                 double free and a wrong size are caught
  alloc_fuzz_replay_test         the fuzz target on its seed corpus and on a
                                 fixed set of pseudo-random programs
  stress_faults_test             the stress test with OS mappings failing at
                                 random (fault injection), then recovery
  stress_soak_test               a short soak: RSS sampled four times a second
tools/measure/fuzz.sh runs the same fuzz target under libFuzzer (clang).
"""

load("//tests:flavours.bzl", "flavour_test")
load("//tools/config:defs.bzl", "skip_rss_bounds_under_sanitizers", "skip_under")

def hc_reliability_tests(stage, soak_seconds = 10):
    """Instantiates the reliability checks against `stage`.

    Args:
      stage: the stage's allocator library, exporting the hc_* API.
      soak_seconds: how long stress_soak_test runs (CI keeps it short;
        for a real soak: bazel test //stageN_x:stress_soak_test
        --test_env=HC_STRESS_SOAK_SECONDS=3600 --test_timeout=4000).
    """
    native.cc_binary(
        name = "misuse",
        testonly = True,
        deps = ["//tests:misuse", stage],
    )

    for tool in ["valgrind", "asan"]:
        flavour_test(
            name = "checker_reports_%s_test" % tool,
            size = "medium",
            flavour = tool,
            binary = ":misuse",
            runner = "//tests:expect_reports",
            args = [tool],
            # Under --config=debug, HC_DEBUG stops a double free itself
            # before memcheck sees it (bad_input_debug_test checks that).
            target_compatible_with = skip_under({
                "debug": "HC_DEBUG aborts on the double free before memcheck reports it",
            }) if tool == "valgrind" else None,
        )

    native.cc_binary(
        name = "bad_input_test_bin",
        testonly = True,
        deps = [
            "//tests:bad_input",
            stage,
            "@googletest//:gtest_main",
        ],
    )

    native.cc_test(
        name = "bad_input_test",
        size = "small",
        deps = [
            "//tests:bad_input",
            stage,
            "@googletest//:gtest_main",
        ],
    )

    flavour_test(
        name = "bad_input_debug_test",
        size = "small",
        flavour = "debug",
        binary = ":bad_input_test_bin",
    )

    native.cc_test(
        name = "alloc_fuzz_replay_test",
        # Under --config=tsan every access the model checks goes through
        # TSan's runtime: ten times the plain run or more.
        size = "medium",
        args = ["$(locations //tests:alloc_fuzz_corpus)"],
        data = ["//tests:alloc_fuzz_corpus"],
        deps = [
            "//tests:alloc_fuzz",
            "//tests:fuzz_replay_main",
            stage,
        ],
    )

    # The stress test's two other modes (knobs of tests/stress_test.cc).
    for name, env in [
        ("stress_faults_test", {"HC_STRESS_FAIL_ONE_IN": "2", "HC_STRESS_OPS": "50000"}),
        ("stress_soak_test", {"HC_STRESS_SOAK_SECONDS": str(soak_seconds), "HC_STRESS_THREADS": "4"}),
    ]:
        native.cc_test(
            name = name,
            size = "medium",
            deps = [
                "//tests:stress",
                stage,
                "@googletest//:gtest_main",
            ],
            env = env,
            # The soak bounds RSS growth on stages that release to the OS.
            target_compatible_with = skip_rss_bounds_under_sanitizers() if name == "stress_soak_test" else None,
        )
