#!/usr/bin/env python3
"""tools/repeat_cases.py — hunts flaky tests the way the grader runs them.

usage: tools/repeat_cases.py [--runs N] [--jobs J] [--filter GLOB] BINARY...

Runs every googletest case of each BINARY (a built cc_test: bazel-bin/...)
N times, each run a process of its own with --gtest_filter=CASE, J at a
time, as tools/grade.py does, and prints each case that failed at least
once with its count and the first failure's reason (grade.py's
failure_reason). Exit status 1 if any case failed.
"""

import argparse
import collections
import concurrent.futures
import fnmatch
import os
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grade  # noqa: E402


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("binaries", nargs="+")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--filter", default="*", help="cases to repeat (fnmatch), default all")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="an environment variable the binaries' BUILD sets (env = ...)")
    args = parser.parse_args(argv)
    env = dict(os.environ, TEST_TMPDIR=tempfile.mkdtemp(prefix="repeat-cases."))
    env.update(e.split("=", 1) for e in args.env)
    work = []
    for binary in args.binaries:
        cases = grade.gtest_cases(os.path.abspath(binary), env) or []
        work += [(binary, c) for c in cases if fnmatch.fnmatch(c, args.filter)]
    fails, why = collections.Counter(), {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(grade.run_case, os.path.abspath(b), c, env, os.getcwd()): (b, c)
                   for b, c in work for _ in range(args.runs)}
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            ok, reason = future.result()
            if ok is False:
                key = futures[future]
                fails[key] += 1
                why.setdefault(key, reason)
                print(f"failed: {os.path.basename(key[0])} {key[1]}: {reason}", flush=True)
            if done % 500 == 0:
                print(f"({done} of {len(futures)} runs)", flush=True)
    for (binary, case), n in sorted(fails.items()):
        print(f"{n:4}/{args.runs}  {os.path.basename(binary)} {case}: {why[(binary, case)]}")
    print(f"repeat_cases: {len(work)} cases x {args.runs} runs, {len(fails)} failed at least once")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
