#!/usr/bin/env python3
"""tools/labs/make_lab_test.py — the marker parsing of tools/labs/make_lab.py, alone.

Run by tools/labs/lab_test.sh before the Bazel runs (python3 tools/labs/make_lab_test.py).
"""

import os
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_lab  # noqa: E402

SOURCE = """/* a layer */
#include "stage9_x/x.h"
#include "common/os.h"

int answer(void) {
    /* LAB BEGIN: answer */
    return 42;
    /* LAB END: answer */
}

void twice(int *p) {
    /* LAB BEGIN: twice */
    *p *= 2;
    /* LAB END: twice */
}
"""


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def write(directory, name, text):
    path = os.path.join(directory, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


class MarkerTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def test_regions_are_found_with_their_lines(self):
        path = write(self.dir.name, "x.c", SOURCE)
        self.assertEqual(make_lab.regions(path), [("answer", 6, 8), ("twice", 12, 14)])

    def test_strip_replaces_each_region_by_a_stop_and_includes_fatal_h(self):
        path = write(self.dir.name, "x.c", SOURCE)
        self.assertEqual(make_lab.strip(path, "stage9_x/x.c"), ["answer", "twice"])
        text = read(path)
        self.assertNotIn("return 42", text)
        self.assertNotIn("*p *= 2", text)
        self.assertNotIn("LAB BEGIN", text)
        self.assertIn('    hc_fatal("lab: answer in stage9_x/x.c is not written yet");\n', text)
        self.assertIn('#include "common/os.h"\n#include "common/fatal.h"\n', text)

    def test_a_file_without_markers_is_left_alone(self):
        path = write(self.dir.name, "y.c", "int y;\n")
        self.assertEqual(make_lab.strip(path, "y.c"), [])
        self.assertEqual(read(path), "int y;\n")

    def test_bad_markers_are_errors(self):
        bad = {
            "unclosed": "/* LAB BEGIN: a */\nint a;\n",
            "mismatched": "/* LAB BEGIN: a */\n/* LAB END: b */\n",
            "nested": "/* LAB BEGIN: a */\n/* LAB BEGIN: b */\n/* LAB END: b */\n/* LAB END: a */\n",
            "stray end": "/* LAB END: a */\n",
            "malformed": "/* LAB BEGIN a */\n",
        }
        for what, text in bad.items():
            with self.subTest(what):
                path = write(self.dir.name, "bad.c", text)
                with self.assertRaises(make_lab.LabError):
                    make_lab.regions(path)

    def test_every_stage_marker_in_the_repository_parses(self):
        for stage in make_lab.stages():
            for path in make_lab.stage_sources(os.path.join(make_lab.ROOT, stage)):
                make_lab.regions(path)  # raises on a malformed pair

    def test_a_lab_inside_the_repository_needs_a_bazelignore_line(self):
        # A fake clone: one stage with a marker, and a .bazelignore naming lab2.
        root = self.dir.name
        os.makedirs(os.path.join(root, "stage1_x"))
        write(os.path.join(root, "stage1_x"), "x.c", SOURCE)
        write(root, ".bazelignore", "# comment\nlab2\n")
        with self.assertRaises(make_lab.LabError):
            make_lab.make_lab("stage1_x", os.path.join(root, "elsewhere"), root=root)
        with self.assertRaises(make_lab.LabError):
            make_lab.make_lab("stage1_x", root, root=root, force=True)  # the clone itself
        with self.assertRaises(make_lab.LabError):
            make_lab.make_lab("stage1_x", os.path.dirname(root), root=root, force=True)
        removed = make_lab.make_lab("stage1_x", os.path.join(root, "lab2"), root=root)
        self.assertEqual(removed, [("stage1_x/x.c", "answer"), ("stage1_x/x.c", "twice")])
        with self.assertRaises(make_lab.LabError):  # not empty now
            make_lab.make_lab("stage1_x", os.path.join(root, "lab2"), root=root)

    def test_each_handout_lists_the_hand_in_files_the_grader_copies(self):
        import grade
        for stage in make_lab.stages():
            number = stage[len("stage"):].split("_")[0]
            handout = os.path.join(make_lab.ROOT, "docs", "labs", f"stage{number}.md")
            text = read(handout).split("Hand in these files", 1)[1].split("\n## ", 1)[0]
            listed = [line[3:-1] for line in text.splitlines() if line.startswith("- `")]
            self.assertEqual(listed, grade.handin_files(stage, make_lab.ROOT), handout)

    def test_every_mutant_still_applies_to_the_reference(self):
        # tools/labs/mutants.py edits the reference's text: a change to the code
        # that removes that text turns the mutant stale, not killed.
        import mutants
        for name, stage, rel, old, _, target, _, _ in mutants.MUTANTS:
            with self.subTest(name):
                text = read(os.path.join(make_lab.ROOT, stage, rel))
                self.assertEqual(text.count(old), 1, f"mutant {name} is stale: update tools/labs/mutants.py")
                self.assertTrue(os.path.exists(os.path.join(make_lab.ROOT, stage, "BUILD")))

    def test_the_handout_folders_are_ignored_by_bazel(self):
        for n in range(1, 5):
            self.assertTrue(make_lab.bazel_ignores(f"lab{n}"), f"lab{n} missing from .bazelignore")


    def test_the_handout_check_flags_names_and_tools_the_workspace_lacks(self):
        import handout_check
        with tempfile.TemporaryDirectory() as ws:
            os.makedirs(os.path.join(ws, "tools", "labs"))  # the folder, without the script
            with open(os.path.join(ws, "x.c"), "w") as f:
                f.write("int tc_sweep_cursor;\nvoid tc_set_limit_lower(void);\n")
            with open(os.path.join(ws, "LAB.md"), "w") as f:
                f.write("Use `tc_sweep_cursor` and `tc_set_limit_lower(tc)`, not `tc_steal_cursor`;\n"
                        "run `tools/labs/stage_diff.sh 3 4`; `--test_filter` is a flag; `strtoul`\n"
                        "wraps `tc_shrink_list(\ntc)`.\n```sh\nfenced_is_skipped\n```\n"
                        "<!-- names not in the workspace: strtoul (the C library) -->\n")
            problems = handout_check.check(ws)
        self.assertEqual(len(problems), 3, problems)
        self.assertIn("tc_steal_cursor", problems[0])
        self.assertIn("tools/labs/stage_diff.sh is not in the workspace", problems[1])
        self.assertIn("tc_shrink_list", problems[2])
        self.assertIn("LAB.md:3:", problems[2], "a span that wraps a line keeps its line number")

    def test_the_handout_check_reads_code_not_comments_and_knows_a_solved_lab(self):
        import handout_check
        with tempfile.TemporaryDirectory() as ws:
            os.makedirs(os.path.join(ws, "docs"))
            with open(os.path.join(ws, "docs", "design.md"), "w") as f:
                f.write("the contract\n")
            with open(os.path.join(ws, "x.c"), "w") as f:
                f.write("/* tc_only_in_a_comment, see docs/design.md and docs/stage9.md */\n"
                        "int tc_in_code; // tc_after_code\n"
                        "void f(void) {\n    /* LAB refill: yours to write (see LAB.md). */\n"
                        '    hc_fatal("lab: refill in x.c is not written yet");\n}\n')
            with open(os.path.join(ws, "LAB.md"), "w") as f:
                f.write("`tc_in_code`, `tc_only_in_a_comment`, `tc_after_code`, the piece `refill`\n")
            problems = handout_check.check(ws)
            self.assertEqual(len(problems), 3, problems)
            self.assertIn("tc_only_in_a_comment", problems[0])
            self.assertIn("tc_after_code", problems[1])
            self.assertIn("docs/stage9.md", problems[2], "a cited page the workspace lacks")
            self.assertTrue(handout_check.is_skeleton(ws))
            self.assertEqual(handout_check.main([ws]), 1, "a skeleton's missing names fail")
            # Solved: the stop is gone, the marker names the piece.
            with open(os.path.join(ws, "x.c"), "w") as f:
                f.write("/* LAB BEGIN: refill */\nint tc_in_code;\n/* LAB END: refill */\n")
            with open(os.path.join(ws, "LAB.md"), "w") as f:
                f.write("`tc_in_code`, the piece `refill`, the reference's `tc_helper_of_the_reference`\n")
            self.assertFalse(handout_check.is_skeleton(ws))
            self.assertEqual(len(handout_check.check(ws)), 1, "the piece's name is known from its marker")
            self.assertEqual(handout_check.main([ws]), 0, "a solved lab's missing names are notes")

    def test_failures_that_name_an_invariant_are_read_first(self):
        import grade
        failures = ["A.Fatal: hcmalloc: free(): double free detected of 0x1 (a thread's free list holds it twice)",
                    "A.Timeout: timed out after 60 s",
                    "A.Limit: stage2_centralcache/limits_test.cc:9: past the limit",
                    "A.Dup: tests/conformance_test.cc:86: hc_malloc(0) returned a pointer twice"]
        ranked = sorted(failures, key=grade.failure_rank)
        self.assertEqual([f.split(":")[0] for f in ranked], ["A.Dup", "A.Limit", "A.Fatal", "A.Timeout"])

    def test_a_trace_counts_from_the_lab_whose_layer_it_tests(self):
        import grade
        self.assertNotIn("exits", grade.stage_traces("stage2_centralcache"))
        self.assertIn("exits", grade.stage_traces("stage4_reclaim"))
        self.assertNotIn("idle", grade.stage_traces("stage1_threadcache"))
        self.assertIn("idle", grade.stage_traces("stage2_centralcache"))

    def test_the_index_rewards_a_trace_above_the_reference(self):
        import grade
        run = lambda vs, util: {"ratio": 1.0, "vs_reference": vs, "utilisation": util,
                                "reference_utilisation": 0.5, "mine": None, "libc": None}
        runs = {"churn": run(1.5, 0.5), "ramp": run(0.7, 0.5)}
        perf = grade.grade_performance(runs, {}, ["churn", "ramp"], measured_reference=True)
        self.assertEqual(perf["traces"]["churn"]["throughput_index"], 1.5, "not capped at 1 per trace")
        self.assertAlmostEqual(perf["throughput_index"], 1.1)
        self.assertAlmostEqual(perf["points"]["throughput"], 1.1 * grade.PERF_WEIGHTS["throughput"],
                               msg="throughput above the reference makes up for space below it")
        self.assertAlmostEqual(perf["above_reference"], 0.1 * grade.PERF_WEIGHTS["throughput"])
        runs["churn"] = run(5.0, 0.5)
        perf = grade.grade_performance(runs, {}, ["churn", "ramp"], measured_reference=True)
        self.assertEqual(perf["traces"]["churn"]["throughput_index"], grade.TRACE_INDEX_MAX)

    def test_every_naive_design_still_applies_to_the_reference(self):
        import class_handins
        for name, stage, rel, old, _, _ in class_handins.NAIVE + class_handins.ALTERNATIVE:
            with open(os.path.join(make_lab.ROOT, stage, rel), encoding="utf-8") as f:
                self.assertEqual(f.read().count(old), 1, f"class_handins {name} is stale")

    def test_failure_reasons_quote_the_assertion(self):
        import grade
        out = ("[ RUN      ] A.B\nstage3_pagecache/x_test.cc:46: Failure\nValue of: f()\n"
               "  Actual: false\nExpected: true\nthe leaf was published relaxed\n"
               "[  FAILED  ] A.B (0 ms)\n 1 FAILED TEST\n")
        self.assertEqual(grade.failure_reason(out), "stage3_pagecache/x_test.cc:46: Value of: f() / "
                         "Actual: false / Expected: true / the leaf was published relaxed")
        self.assertEqual(grade.failure_reason("hcmalloc: lab: refill in a.c is not written yet\n"),
                         "hcmalloc: lab: refill in a.c is not written yet")


if __name__ == "__main__":
    unittest.main()
