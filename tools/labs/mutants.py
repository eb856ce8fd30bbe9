#!/usr/bin/env python3
"""tools/labs/mutants.py — do the tests catch the bugs the labs invite?

Each mutant is one small textual edit of the reference (a bug a student could
write) and the Bazel test that must fail because of it. For each mutant the
script applies the edit to a reference copy of its stage (tools/labs/make_lab.py
--reference, in a scratch folder: the clone is never touched), runs the
target there, and reports

    killed     the target failed (and printed `expect`, when one is given)
    SURVIVED   the target passed: no test checks what the edit broke
    stale      the edit's text is no longer in the file (the code changed:
               update the mutant)
    broken     the mutant did not build (a bad mutant, not a verdict)

usage: tools/labs/mutants.py [--list] [--stage STAGE] [NAME...]
Exit status 0 when every mutant run was killed. About 30-60 s per mutant.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_lab  # noqa: E402

# (name, stage, file in the stage, old text, new text, target, expect regex or None, the bug)
MUTANTS = [
    # ---- lab 1 ---------------------------------------------------------------------
    ("push_ignores_limit", "stage1_threadcache", "thread_cache.h",
     "    if (HC_UNLIKELY(fl_full(list)))\n        return 0;",
     "    if (HC_UNLIKELY(fl_full(list) && list->max_length > 0))\n        return 0;",
     "thread_cache_test", None, "the fast path pushes onto a list whose limit is 0 (the sentinel's)"),
    ("refill_drops_batch", "stage1_threadcache", "thread_cache.c",
     "        fl_push_range(&tc->lists[cls], first + size, obj, n - 1);",
     "        (void)obj;",
     "conformance_test", None, "a refill carves a batch and keeps only one object"),
    ("carved_not_counted", "stage1_threadcache", "thread_cache.c",
     "    __atomic_store_n(&chunks->carved_bytes, chunks->carved_bytes + n * size, __ATOMIC_RELAXED);", "",
     "conformance_test", None, "a refill does not count what it carved (stats wrong)"),
    # ---- lab 2 ---------------------------------------------------------------------------
    ("fetch_drops_span_rest", "stage2_centralcache", "central_cache.c",
     "    got = cc_cut_fresh(bucket, cls, want, first, last);\n    hc_lock_unlock(&bucket->lock);\n    if (!installed)",
     "    got = cc_cut_fresh(bucket, cls, want, first, last);\n    bucket->fresh = bucket->fresh_end;\n"
     "    hc_lock_unlock(&bucket->lock);\n    if (!installed)",
     "conformance_test", "objects lost|mapped", "cc_fetch drops the rest of a newly mapped span"),
    ("fresh_cut_splits_lines", "stage2_centralcache", "central_cache.h",
     "    return want < line ? line : want - want % line;",
     "    return want + 0 * line;",
     "false_sharing_test", "share a 64-byte line",
     "a batch cut from never-used memory ends inside a cache line: the next thread's shares it"),
    ("overflow_never_grows", "stage2_centralcache", "thread_cache.c",
     "    if (limit < trip) {\n        tc_grow_limit(tc, cls);\n        limit = list->max_length;\n    } else if",
     "    if (0) {\n    } else if",
     "limits_test", None, "an overflow never grows the list's limit"),
    ("overflow_returns_all", "stage2_centralcache", "thread_cache.c",
     "    tc_give_back(tc, cls, excess > at_least ? excess : at_least);",
     "    tc_give_back(tc, cls, length);",
     "limits_test", None, "an overflow returns the whole list, not one batch"),
    ("return_drops_objects", "stage2_centralcache", "central_cache.c",
     "    fl_push_range(&bucket->objects, first, last, n);",
     "    (void)first; (void)last; (void)n;",
     "limits_test", None, "cc_return loses what it is given"),
    ("refill_keeps_one", "stage2_centralcache", "thread_cache.c",
     "    if (got > 1) /* got - 1 <= the limit: they fit in the empty list */\n        fl_push_range(list, fl_next(first), last, got - 1);",
     "    (void)last;",
     "conformance_test", None, "a refill keeps one object of the batch and drops the rest"),
    ("no_slow_start", "stage2_centralcache", "thread_cache.c",
     "    if (limit < batch)\n        tc_raise_limit(tc, cls, limit + 1);",
     "    if (limit < batch)\n        tc_raise_limit(tc, cls, batch);",
     "central_cache_test", None, "no slow start: a class used once costs a batch"),
    ("limit_past_cap", "stage2_centralcache", "thread_cache.c",
     "    else if (limit < cap)\n        tc_raise_limit(tc, cls, limit + trip < cap ? limit + trip : cap);",
     "    else\n        tc_raise_limit(tc, cls, limit + trip);",
     "central_cache_test", None, "a list's limit grows past the cap"),
    ("refill_asks_a_batch", "stage2_centralcache", "thread_cache.c",
     "    uint32_t want = list->max_length < trip ? list->max_length : trip;",
     "    uint32_t want = trip;",
     "central_cache_test", None, "a refill always asks for a whole batch (no slow start)"),
    ("refill_keeps_returned", "stage2_centralcache", "thread_cache.c",
     "        fl_push_range(list, fl_next(first), last, got - 1);",
     "        fl_push_range(list, first, last, got);",
     # (Under `bazel test` the first case's double free ends the binary;
     # tools/labs/grade.py runs ARefillKeepsInItsListOnlyWhatItDidNotReturn alone.)
     "limits_test", "also in the list it refilled|holds it twice",
     "a refill keeps the object it returns in the list (handed out twice)"),
    ("scavenge_keeps_ran_dry", "stage2_centralcache", "thread_cache.c",
     "    p->ran_dry[0] = p->ran_dry[1] = 0;\n    /* LAB END: scavenge */",
     "    /* LAB END: scavenge */",
     "thread_cache_test", "went back to the central cache",
     "the scavenge never clears ran_dry: a list refilled once is never scavenged again"),
    ("span_race_is_enomem", "stage2_centralcache", "central_cache.c",
     "    got = cc_cut_fresh(bucket, cls, want, first, last);\n    hc_lock_unlock(&bucket->lock);\n    if (!installed)",
     "    got = installed ? cc_cut_fresh(bucket, cls, want, first, last) : 0;\n"
     "    hc_lock_unlock(&bucket->lock);\n    if (!installed)",
     "central_cache_test", "lost the span race returned nothing",
     "a fetch that loses the race to install a span returns nothing (as if out of memory)"),
    ("carve_under_lock", "stage2_centralcache", "central_cache.c",
     "    hc_lock_unlock(&bucket->lock);\n    if (got > 0)\n        return got;",
     "    if (got > 0) {\n        hc_lock_unlock(&bucket->lock);\n        return got;\n    }",
     "central_cache_test", "lock watchdog: waited",
     "the bucket lock held across cc_map_span (os_map), then taken again (deadlock)"),
    # ---- lab 3 -----------------------------------------------------------------------
    ("merge_left_only", "stage3_pagecache", "page_cache.c",
     "    if (right != NULL) {", "    if (right != NULL && 0) {",
     "page_cache_test", None, "a freed span merges with its left neighbour only"),
    ("merge_right_only", "stage3_pagecache", "page_cache.c",
     "    if (left != NULL) {", "    if (left != NULL && 0) {",
     "page_cache_test", None, "a freed span merges with its right neighbour only"),
    ("span_never_returned", "stage3_pagecache", "central_cache.c",
     "            if (--span->objects_in_use > 0)\n                continue;",
     "            if (--span->objects_in_use > 0 || 1)\n                continue;",
     "central_cache_test", None, "a span whose objects all came back stays in its bucket"),
    ("merge_drops_backed", "stage3_pagecache", "page_cache.c",
     "        s->backed_pages += left->backed_pages;\n", "",
     "malloc_test", None, "a merge forgets the left neighbour's backed pages (they count as released)"),
    ("merge_drops_dirty", "stage3_pagecache", "page_cache.c",
     "        s->dirty_pages += left->dirty_pages;\n", "",
     "page_cache_test", None, "a merge forgets the left neighbour's dirty pages (calloc hands them out uncleared)"),
    ("split_loses_tail", "stage3_pagecache", "page_cache.c",
     "    if (tail) free_span_insert(tail);", "    (void)tail;",
     "page_cache_test", None, "a split forgets the pages after the cut"),
    ("page_map_relaxed_publish", "stage3_pagecache", "page_map.c",
     "__atomic_store_n(&pm_root[i], leaf, __ATOMIC_RELEASE);",
     "__atomic_store_n(&pm_root[i], leaf, __ATOMIC_RELAXED);",
     "page_map_order_test", "published with __ATOMIC_RELAXED",
     "a new leaf is published with a relaxed store (a reader may see it before its contents)"),
    ("give_back_under_lock", "stage3_pagecache", "central_cache.c",
     "        hc_lock_unlock(&bucket->lock);\n    }\n    cc_give_back_spans(&given_back);",
     "        cc_give_back_spans(&given_back);\n        hc_lock_unlock(&bucket->lock);\n    }",
     "lock_order_test", "called with a bucket lock held",
     "empty spans go back to the page cache with the bucket lock held (the lock order)"),
    ("free_skips_object_check", "stage3_pagecache", "page_map.h",
     "if (HC_UNLIKELY(z & PM_TEST_WORD(offset, start_mask)))",
     "if (HC_UNLIKELY(z & PM_TEST_WORD(offset, start_mask) & 0))",
     "malloc_test", None, "hc_free skips the object-start test: a pointer inside an object passes as one"),
    # ---- lab 4 -----------------------------------------------------------------------
    ("exit_keeps_objects", "stage4_reclaim", "thread_exit.c",
     "    tc_reclaim(tc);\n    /* LAB END: thread_exit */",
     "    /* LAB END: thread_exit */",
     "thread_exit_test", None, "an exiting thread's cache is never reclaimed (objects and share)"),
    ("exit_keeps_share", "stage4_reclaim", "budget.c",
     "__ATOMIC_RELAXED);\n    __atomic_fetch_add(&tc_unclaimed, back, __ATOMIC_RELAXED);\n}",
     "__ATOMIC_RELAXED);\n    (void)back;\n}",
     "budget_test", None, "an exiting thread's budget share is lost"),
    ("never_steal_share", "stage4_reclaim", "budget.c",
     "                got += tc_steal(tc);", "                got += 0;",
     "budget_test", None, "a busy thread never takes share from idle ones"),
    ("busy_thread_stolen_from", "stage4_reclaim", "budget.c",
     "    __atomic_store_n(&tc_ext(tc)->active_epoch, __atomic_load_n(&tc_epoch, __ATOMIC_RELAXED), __ATOMIC_RELAXED);\n",
     "",
     "steal_test", "took a busy thread's spare",
     "a reservation does not mark its thread busy: the sweep steals from busy threads"),
    ("parse_no_overflow_check", "stage4_reclaim", "options.c",
     "    if (*p != '\\0' || (shift && value > (SIZE_MAX >> shift)))",
     "    if (*p != '\\0')",
     "options_test", None, "a size with a suffix may overflow"),
]


def run_stage(stage, mutants, scratch, output_base, log_dir, workspace=None):
    given = workspace is not None  # a reference copy the caller made, and its server
    if not given:
        workspace = os.path.join(scratch, stage)
        make_lab.make_lab(stage, workspace, reference=True, force=True)
    results = []
    for name, _, rel, old, new, target, expect, _ in mutants:
        path = os.path.join(workspace, stage, rel)
        with open(path, encoding="utf-8") as f:
            original = f.read()
        if original.count(old) != 1:
            results.append((name, "stale", target))
            continue
        with open(path, "w", encoding="utf-8") as f:
            f.write(original.replace(old, new))
        # HC_BAZEL_DISK_CACHE (tools/test.sh sets it): googletest and the
        # unchanged files come from the cache the main tree's builds filled.
        cache = [f"--disk_cache={os.environ['HC_BAZEL_DISK_CACHE']}"] \
            if os.environ.get("HC_BAZEL_DISK_CACHE") else []
        cmd = ["bazel", f"--output_base={output_base}", "test", "--color=no", "--curses=no",
               "--noshow_progress", "--test_output=errors"] + cache + [f"//{stage}:{target}"]
        done = subprocess.run(cmd, cwd=workspace, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(original)
        log = os.path.join(log_dir, f"{name}.log")
        with open(log, "w", encoding="utf-8") as f:
            f.write(done.stdout)
        if done.returncode == 0:
            verdict = "SURVIVED"
        elif done.returncode == 3:
            verdict = "killed" if not expect or re.search(expect, done.stdout) else \
                f"killed, but without /{expect}/"
        else:
            verdict = f"broken (bazel exit {done.returncode})"
        results.append((name, verdict, target))
        print(f"{name:24} {verdict:10} //{stage}:{target}   ({log})", flush=True)
    if not given:
        subprocess.run(["bazel", f"--output_base={output_base}", "shutdown"], cwd=workspace,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return results


def write_mutant(name, outdir):
    mutant = next((m for m in MUTANTS if m[0] == name), None)
    if mutant is None:
        print(f"mutants: no mutant {name}", file=sys.stderr)
        return 2
    _, stage, rel, old, new = mutant[:5]
    for path in make_lab.stage_sources(os.path.join(make_lab.ROOT, stage)):
        out = os.path.join(outdir, os.path.relpath(path, make_lab.ROOT))
        os.makedirs(os.path.dirname(out), exist_ok=True)
        shutil.copy2(path, out)
    path = os.path.join(outdir, stage, rel)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if text.count(old) != 1:
        print(f"mutants: {name} is stale", file=sys.stderr)
        return 1
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace(old, new))
    return 0


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*")
    parser.add_argument("--stage")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--keep-logs", metavar="DIR", help="write each mutant's test log here")
    parser.add_argument("--write", nargs=2, metavar=("NAME", "DIR"),
                        help="write the stage's sources with mutant NAME applied under DIR/STAGE "
                             "(a hand-in with that bug, for testing the grader) and exit")
    parser.add_argument("--in", dest="workspace", metavar="DIR", help="run in DIR, a reference "
                        "copy already built (make_lab.py --reference), with --output-base: "
                        "each mutant then costs one file's compile and one test (tools/labs/lab_test.sh)")
    parser.add_argument("--output-base", metavar="DIR", help="with --in: that copy's output base")
    args = parser.parse_args(argv)
    if args.write:
        return write_mutant(*args.write)
    if bool(args.workspace) != bool(args.output_base):
        parser.error("--in and --output-base go together")
    chosen = [m for m in MUTANTS if (not args.names or m[0] in args.names)
              and (not args.stage or m[1] == args.stage)]
    if args.list:
        for name, stage, rel, _, _, target, _, bug in chosen:
            print(f"{name:24} {stage}/{rel:18} //{stage}:{target:20} {bug}")
        return 0
    if not chosen:
        print("mutants: nothing matches", file=sys.stderr)
        return 2
    scratch = tempfile.mkdtemp(prefix="hcmalloc-mutants.")
    log_dir = args.keep_logs or os.path.join(scratch, "logs")
    os.makedirs(log_dir, exist_ok=True)
    results = []
    try:
        for stage in make_lab.stages():
            of_stage = [m for m in chosen if m[1] == stage]
            if of_stage and args.workspace:
                results += run_stage(stage, of_stage, scratch, os.path.abspath(args.output_base),
                                     log_dir, os.path.abspath(args.workspace))
            elif of_stage:
                results += run_stage(stage, of_stage, scratch, os.path.join(scratch, "ob"), log_dir)
    finally:
        subprocess.run(["chmod", "-R", "u+w", scratch], stderr=subprocess.DEVNULL)
        if args.keep_logs:
            shutil.rmtree(os.path.join(scratch, "ob"), ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)
    killed = sum(1 for _, v, _ in results if v == "killed")
    print(f"mutants: {killed} of {len(results)} killed")
    return 0 if killed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
