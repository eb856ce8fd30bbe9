#!/usr/bin/env python3
"""tools/labs/grade.py — grades a lab: points per group of tests, and a performance index.

    tools/labs/grade.py                         in a lab workspace: a preview of your grade
    tools/labs/grade.py STAGE --handin DIR      instructor, from the clone: the official grade
    tools/labs/grade.py STAGE --handin D1 D2 .. a class: one sheet each and class.csv (--out)
    tools/labs/grade.py STAGE --handin FOLDER   the same, for every hand-in folder in FOLDER
    tools/labs/grade.py STAGE --reference       instructor: the reference's own score sheet

Official grading (--handin) never runs the student's tests: it generates a
fresh skeleton of STAGE (tools/labs/make_lab.py, the instructor's tests), copies
in only the hand-in files from DIR (the files of STAGE with LAB regions:
`tools/labs/grade.py STAGE --handin-list` prints them), and grades that. The
preview in a workspace grades the workspace as it stands, its tests
included.

Speed. A class is graded in one scratch workspace with one Bazel server and
output base (and --disk-cache, if given, shared by every run): googletest,
the earlier stages and the sanitizer runtimes are built once, so a hand-in
costs only its own files' compiles and its test runs. --scratch DIR keeps
that workspace between invocations. Googletest cases run --jobs at a time.

Groups. Every test target of //STAGE:all is a group. A googletest target is
run test by test (--gtest_filter), each in its own process with a time
limit, so an hc_fatal or a deadlock costs that test only; other targets
(shell tests, sanitizer flavours) run in one `bazel test` and pass or fail
as a whole. A failure's reason is the failing assertion (file:line: the
message), the fatal message, or the sanitizer's report, not gtest's summary.
A group lists its failures best first (failure_rank: a test's own
assertion, the duplicate-object check first, before a fatal message), and
the sheet opens with the one to read first.
--quick leaves out the flavours (TSan, ASan, Valgrind, debug, the drop-in's
programs): the plain ones first is also the fast way to iterate.

Weights (100 points; --quick grades out of 90 and says so):
    unit         35  the stage's own tests (the layer you wrote)
    conformance  20  the API contract, and memory accounting after every test
    stress        10  threads, random sizes, faults
    reliability    5  bad input, fuzz replay
    flavours      10  TSan, ASan, Valgrind, debug builds (not with --quick)
    performance   20  throughput 10 + space 10, on the traces below
                      (--perf-only: this alone, out of 20)
Inside a category the points are split between its targets, and a target's
share by the fraction of its tests that pass. A target that tests code the
handout gives (GIVEN below: e.g. lab 3's heap_map_test) weighs a quarter of
one that tests a piece the student writes; one that tests a rule the
handout states and nothing else sees (RULES: lab 3's page_map_order_test
and lock_order_test, lab 4's steal_test) weighs double, all or nothing.

Performance index, per trace (tools/labs/trace_driver.c; stage_traces: a trace
counts from the lab whose layer it tests, so none charges a lab for what a
later lab fixes), --reps runs, each a fresh process: the hand-in's, the
reference's and libc's in turns, their ratios taken rep by rep (the median
counts) and the best utilisation of each:
    throughput  your ops/s over the reference's, in seconds of CPU (user +
                system, every thread), not of the wall clock: on a shared
                machine wall time measures the other jobs
    space       your utilisation over the reference's, where utilisation =
                peak bytes the trace holds / peak bytes mapped (os_mapped_bytes)
A trace's index counts up to TRACE_INDEX_MAX; each index is the mean over
the traces (SPACE_ONLY ones for space alone), worth its weight times the
index, uncapped; the performance category (the two together) is capped at
its 20 points, so a design that beats the reference on some traces earns
there what it loses on others, and points above 20 are shown as credit
above the reference. A trace that crashes scores 0 for both.
The reference: with --handin, the clone's reference, its trace driver built
once per invocation and run beside every hand-in's (the whole class meets
the same build on the same machine at the same time; --against-yardsticks
turns it off); in a workspace preview (no reference there), the figures
shipped in tools/labs/yardsticks.json, through each one's ratio to libc malloc
run here. Re-measure them on the grading machine with
    tools/labs/grade.py STAGE --reference --perf-only --write-yardsticks --reps 5

The score sheet is printed and written as JSON (--json, default grade.json
in the current folder; a class: --out FOLDER, one NAME.json and NAME.txt
per hand-in and class.csv).
"""

import argparse
import concurrent.futures
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
TOOLS = os.path.dirname(os.path.abspath(__file__))
# The clone or lab workspace this file is in, as ROOT/tools/labs/grade.py.
ROOT = os.path.dirname(os.path.dirname(TOOLS))

WEIGHTS = {"unit": 35, "conformance": 20, "stress": 10, "reliability": 5, "flavours": 10}
PERF_WEIGHTS = {"throughput": 10, "space": 10}
TRACES = ["churn", "ramp", "threads", "handoff", "burst", "sparse", "idle", "waves", "large", "exits"]
# A trace counts from the lab whose layer it tests, so that none charges a
# lab for what a later lab's layer fixes: burst, sparse and idle measure
# lab 2's list policy (stage 1 has none), and exits measures lab 4's
# reclamation (before it, an exiting thread's cache is stranded whatever
# the lab does).
TRACE_FROM_STAGE = {"burst": 2, "sparse": 2, "idle": 2, "exits": 4}
# Traces whose run time is thread creation and the trace's own bookkeeping,
# not the allocator: their throughput is shown, not counted.
SPACE_ONLY = {"sparse", "idle"}
# A trace's index (yours over the reference's) counts up to this much, so
# that one trace cannot buy all the others.
TRACE_INDEX_MAX = 2.0
YARDSTICKS = os.path.join(TOOLS, "yardsticks.json")
TRACE_ABOUT = {
    "churn": "random malloc/free of small sizes over 20,000 live slots",
    "ramp": "200,000 objects of 64 B built up, then all freed; five times",
    "threads": "two threads, each its own churn",
    "handoff": "one thread allocates 96 B objects, another frees them",
    "waves": "8 MiB of one size at a time, 48 B to 508 KiB, freed odd then even",
    "large": "random blocks of 32 KiB to 1 MiB, 64 live",
    "exits": "48 short-lived threads, 4 at a time, each caching 3,000 objects",
    "burst": "64 objects of one class, then the next of 24; the cache flushed after each 24",
    "sparse": "16 threads at once, each holding 20 objects of each of 24 classes",
    "idle": "a list of 1 MiB left idle while its thread keeps busy; then another thread wants 1 MiB",
}


def stage_traces(stage):
    """The traces that grade `stage` (TRACE_FROM_STAGE)."""
    n = int(re.match(r"^stage([0-9]+)_", stage).group(1))
    return [t for t in TRACES if TRACE_FROM_STAGE.get(t, 1) <= n]
# Targets that test code the handout gives (not a piece the student
# writes): they still must pass, but weigh GIVEN_WEIGHT of a lab target.
GIVEN = {
    "stage3_pagecache": {"heap_map_test", "span_treap_test"},
    "stage4_reclaim": {"heap_map_test", "trace_test", "release_test", "release_rate_default_test",
                       "release_rate_never_test", "release_rate_eager_test", "release_rate_delay_test"},
}
GIVEN_WEIGHT = 0.25
# Targets that test one rule a handout states and no other test can see
# (the publication order, the lock order, idle-only stealing): a rule is
# kept or broken, so the target is all or nothing, and it weighs
# RULE_WEIGHT: a bug that passes every other test must still cost more
# than a stray test.
RULES = {
    "stage3_pagecache": {"page_map_order_test", "lock_order_test"},
    "stage4_reclaim": {"steal_test"},
}
RULE_WEIGHT = 2.0
FLAVOUR = re.compile(r"(_tsan|_asan|_valgrind|_debug_test|:debug_test|:dropin_[a-z_]+|:fork_test|"
                     r"_programs_test)$")
# Tests of one reference policy that a lab leaves to the student: run and
# shown, not counted (lab 2's handout, LAB.md: the policy is the lesson).
NOT_GRADED = {"stage2_centralcache": {"CentralCache.SlowStartGrowsTheBatchOneByOneThenByBatches"}}
TEST_SECONDS = 60  # per googletest case: the lock watchdog fires first
GRADE_WATCHDOG_SECONDS = 3  # the lock watchdog's limit in the cases run one by one
TRACE_SECONDS = 10


def log(msg):
    print(msg, file=sys.stderr, flush=True)


class Bazel:
    """One workspace's Bazel: its output base (one server, kept warm across a
    class's hand-ins) and an optional disk cache shared by every run."""

    def __init__(self, workspace, output_base=None, disk_cache=None):
        self.workspace, self.output_base, self.disk_cache = workspace, output_base, disk_cache

    def run(self, *args, check=False, quiet=True):
        # The class's --disk-cache, else HC_BAZEL_DISK_CACHE (tools/test.sh
        # sets it): byte-identical actions (googletest, unchanged files) are
        # shared with the main tree's builds.
        startup = [f"--output_base={self.output_base}"] if self.output_base else []
        disk_cache = self.disk_cache or os.environ.get("HC_BAZEL_DISK_CACHE")
        cache = [f"--disk_cache={disk_cache}"] if disk_cache and args[0] in ("build", "test") else []
        cmd = ["bazel"] + startup + [args[0], "--color=no", "--curses=no", "--noshow_progress"] + \
            cache + list(args[1:])
        done = subprocess.run(cmd, cwd=self.workspace, text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT if quiet else None)
        if check and done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stdout[-3000:]}")
        return done

    def info(self, what, *flags):
        return self.run("info", *flags, what, check=True).stdout.strip().splitlines()[-1]

    def shutdown(self):
        subprocess.run(["bazel"] + ([f"--output_base={self.output_base}"] if self.output_base else []) +
                       ["shutdown"], cwd=self.workspace, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)


def lab_stage(workspace):
    found = sorted((d for d in os.listdir(workspace) if re.match(r"^stage[0-9]+_", d)),
                   key=lambda d: int(re.match(r"^stage([0-9]+)_", d).group(1)))
    if not found:
        raise SystemExit("grade: no stageN_* folder here: run it in a lab workspace, or name STAGE")
    return found[-1]


def test_targets(bazel, stage):
    """[(label, kind, category, env)] of //stage:all's tests."""
    text = bazel.run("query", "--output=build", f"tests(//{stage}:all)", check=True).stdout
    targets = []
    for block in re.split(r"\n(?=[a-z_]+\()", text):
        head = re.match(r"\s*(?:#.*\n)*([a-z_]+)\(", block)
        name = re.search(r'^\s*name = "([^"]+)"', block, re.M)
        if not head or not name:
            continue
        # The package from the BUILD file's path in the location comment:
        # a suite of //stage:all may name tests of a subpackage (stage 4's checks/).
        where = re.search(rf"/({re.escape(stage)}(?:/[\w.-]+)*)/BUILD(?:\.bazel)?:\d+", block)
        package = where.group(1) if where else stage
        kind, label = head.group(1), f"//{package}:{name.group(1)}"
        env = {}
        m = re.search(r"^\s*env = (\{.*\}),?$", block, re.M)
        if m:
            env = json.loads(m.group(1))
        generated = re.search(r'generator_function = "(hc_stage_tests|hc_reliability_tests)"', block)
        short = name.group(1)
        if FLAVOUR.search(label) or kind != "cc_test":  # (before "gtest" is told apart)
            category = "flavours" if FLAVOUR.search(label) or "_asan" in short or "_valgrind" in short \
                else ("reliability" if generated else "unit")
        elif short == "conformance_test":
            category = "conformance"
        elif short.startswith("stress"):
            category = "stress"
        elif generated:
            category = "reliability"
        else:
            category = "unit"
        if kind == "cc_test" and "@googletest//" in block:
            kind = "gtest"
        targets.append((label, kind, category, env))
    return sorted(targets)


def gtest_cases(binary, env):
    try:
        out = subprocess.run([binary, "--gtest_list_tests"], env=env, text=True, timeout=60,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    cases, suite = [], None
    for line in out.splitlines():
        if not line.strip() or line.startswith(" ") and suite is None:
            continue
        if not line.startswith(" "):
            suite = line.split("#")[0].strip()
        else:
            cases.append(suite + line.split("#")[0].strip())
    return cases


# A path as the sheet shows it: from the package on (no machine's folders).
_SOURCE_PATH = re.compile(r"(?:/[^\s:()]*)?/((?:stage[0-9]+_[a-z0-9]+|common|tests|tools)/[\w./-]+)")
_ASSERTION = re.compile(r"^(\S+?:\d+): (?:Failure|error: Death test.*)$")


def failure_reason(out, limit=300):
    """The line a student should read first: the failing assertion with its
    message, else the program's fatal message, else a sanitizer's report
    with its first frames, else the last line that is not gtest's summary."""
    lines = [l.rstrip() for l in out.splitlines()]
    for i, line in enumerate(lines):
        m = _ASSERTION.match(line.strip())
        if m:
            message = []
            for more in lines[i + 1:i + 10]:
                if more.startswith("[") or _ASSERTION.match(more.strip()):
                    break
                if more.strip():
                    message.append(more.strip())
            text = f"{m.group(1)}: " + " / ".join(message)
            return _SOURCE_PATH.sub(r"\1", text)[:limit]
    for i, line in enumerate(lines):
        if re.search(r"(ThreadSanitizer|AddressSanitizer|LeakSanitizer): ", line) or \
                re.match(r"^==\d+== (Invalid|Conditional|Mismatched|Syscall param|\S+ bytes in)", line):
            frames = [re.sub(r"^==\d+==\s+", "", l.strip()) for l in lines[i + 1:i + 30]
                      if re.match(r"^\s*(#\d+ |==\d+==\s+(at|by) )", l)]
            head = re.sub(r"^==\d+== |\(pid=\d+\)", "", line.strip())
            return _SOURCE_PATH.sub(r"\1", " / ".join([head] + frames[:2]))[:limit]
    for line in lines:
        if line.startswith("hcmalloc:") or "lab: " in line and "not written yet" in line:
            return _SOURCE_PATH.sub(r"\1", line.strip())[:limit]
    summary = re.compile(r"^(\[[ =A-Z-]+\]|\s*$| *[0-9]+ FAILED TESTS?|YOU HAVE|Note: Google Test filter)")
    rest = [l for l in lines if not summary.match(l)]
    return _SOURCE_PATH.sub(r"\1", (rest or lines or ["(no output)"])[-1].strip())[:limit]


_QUOTED_ASSERTION = re.compile(r"^(killed by signal \d+: )?\S+: \S+\.(cc|c|h):\d+: ")
_DUPLICATE = re.compile(r"twice|duplicate", re.I)


def failure_rank(failure):
    """Which of a group's failures the sheet shows first: a test's own check
    of an invariant (its assertion, the duplicate-object check before any
    other) names the layer that broke; a fatal message, a signal or a time
    limit names only where the program noticed (a refill that keeps its
    returned object shows up as the program's "double free")."""
    if _QUOTED_ASSERTION.match(failure):
        return 0 if _DUPLICATE.search(failure) else 1
    return 2


def run_case(binary, case, env, cwd):
    try:
        done = subprocess.run([binary, f"--gtest_filter={case}"], env=env, cwd=cwd, text=True,
                              timeout=TEST_SECONDS, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if done.returncode == 0 and "[  SKIPPED ] 1 test" in done.stdout:
            return None, "skipped"  # a feature of a later stage: not counted
        ok = done.returncode == 0 and "[  PASSED  ] 1 test" in done.stdout
        why = "" if ok else failure_reason(done.stdout)
        if not ok and done.returncode < 0:
            why = f"killed by signal {-done.returncode}: " + why
        return ok, why
    except subprocess.TimeoutExpired:
        return False, f"timed out after {TEST_SECONDS} s"


def run_whole_targets(bazel, labels):
    """{label: (passed, why)} for targets graded whole, in one `bazel test`."""
    if not labels:
        return {}
    done = bazel.run("test", "--keep_going", "--test_output=summary", *labels)
    testlogs = bazel.info("bazel-testlogs")
    results = {}
    for label in labels:
        m = re.search(rf"^{re.escape(label)}\s+(\(cached\) )?(PASSED|FAILED|TIMEOUT|NO STATUS|"
                      rf"FAILED TO BUILD|INCOMPLETE|SKIPPED)", done.stdout, re.M)
        status = m.group(2) if m else ("NO STATUS" if done.returncode else "PASSED")
        if status in ("PASSED", "SKIPPED"):
            results[label] = (True, "")
            continue
        why = {"FAILED TO BUILD": "does not build", "NO STATUS": "did not run (a build failed?)",
               "TIMEOUT": "timed out"}.get(status, "")
        log_path = os.path.join(testlogs, *label[2:].split(":"), "test.log")
        if status in ("FAILED", "TIMEOUT") and os.path.exists(log_path):
            with open(log_path, encoding="utf-8", errors="replace") as f:
                why = (why + ": " if why else "") + failure_reason(f.read())
        results[label] = (False, why or status.lower())
    return results


def grade_tests(bazel, workspace, stage, quick, jobs=1):
    targets = [t for t in test_targets(bazel, stage) if not (quick and t[2] == "flavours")]
    cc = [t[0] for t in targets if t[1] in ("cc_test", "gtest")]
    build = bazel.run("build", "--keep_going", *cc)
    # Not the bazel-bin link: a later build in another configuration moves it.
    bin_dir = bazel.info("bazel-bin")
    groups, whole, pending = [], [], []
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs))
    for label, kind, category, env in targets:
        name = label.split(":")[1]
        rule = name in RULES.get(stage, ())
        group = {"target": label, "category": category, "passed": 0, "total": 1, "failures": [],
                 "weight": GIVEN_WEIGHT if name in GIVEN.get(stage, ()) else RULE_WEIGHT if rule else 1.0}
        if rule:
            group["rule"] = True
        groups.append(group)
        package = label[2:].split(":")[0]  # stage 4's suite names tests of checks/ too
        binary = os.path.join(bin_dir, package, name)
        cases = gtest_cases(binary, dict(os.environ, **env)) if kind == "gtest" and \
            os.path.exists(binary) else None
        if kind in ("cc_test", "gtest") and not os.path.exists(binary):
            group["failures"].append("does not build" if build.returncode else "no binary")
            group["passed"] = 0
        elif cases:
            run_env = dict(os.environ, **env)
            # A deadlocked hand-in stops each test at the watchdog: 3 s, not
            # the build's 10 (common/lock.h), so it costs a class seconds.
            run_env.setdefault("HC_LOCK_WATCHDOG_SECONDS", str(GRADE_WATCHDOG_SECONDS))
            tmp = tempfile.mkdtemp(prefix="grade-test.")
            run_env["TEST_TMPDIR"] = tmp
            runfiles = binary + ".runfiles"
            # As `bazel test` would: in the main repository's runfiles.
            main_repo = os.path.join(runfiles, os.path.basename(os.path.dirname(os.path.dirname(
                os.path.dirname(bin_dir)))))
            cwd = main_repo if os.path.isdir(main_repo) else workspace
            if os.path.isdir(runfiles):
                run_env["RUNFILES_DIR"] = runfiles
            futures = [(case, pool.submit(run_case, binary, case, run_env, cwd)) for case in cases]
            pending.append((group, futures, tmp))
        else:
            whole.append((group, label))
    whole_results = run_whole_targets(bazel, [label for _, label in whole])
    for group, label in whole:
        ok, why = whole_results[label]
        group["passed"] = int(ok)
        if not ok:
            group["failures"].append(why)
    for group, futures, tmp in pending:
        group["total"] = 0
        for case, future in futures:
            ok, why = future.result()
            if ok is None:
                continue
            if case in NOT_GRADED.get(stage, ()):
                group["not_graded"] = f"{case}: {'passed' if ok else why}"
                continue
            group["total"] += 1
            group["passed"] += ok
            if not ok:
                group["failures"].append(f"{case}: {why}")
        shutil.rmtree(tmp, ignore_errors=True)
    pool.shutdown()
    for g in groups:
        g["failures"].sort(key=failure_rank)
        log(f"  {g['target']}: {g['passed']}/{g['total']}")
    for category, weight in WEIGHTS.items():
        members = [g for g in groups if g["category"] == category]
        total_weight = sum(g["weight"] for g in members)
        for g in members:
            g["max_points"] = weight * g["weight"] / total_weight
            share = g["passed"] / g["total"] if g["total"] else 1.0
            if g.get("rule") and share < 1:
                share = 0.0  # a rule broken anywhere is broken
            g["points"] = g["max_points"] * share
    return groups


def build_drivers(bazel, workspace, stage):
    """Builds tools/labs/trace_driver.c against //stage:hcmalloc and against libc,
    in a package of its own; returns the two binaries' paths (None: failed)."""
    pkg = os.path.join(workspace, "grade_traces")
    os.makedirs(pkg, exist_ok=True)
    shutil.copy2(os.path.join(TOOLS, "trace_driver.c"), pkg)
    with open(os.path.join(pkg, "BUILD"), "w", encoding="utf-8") as f:
        f.write(f'''# Written by tools/labs/grade.py: the performance traces.
cc_binary(name = "trace_driver", srcs = ["trace_driver.c"], deps = ["//{stage}:hcmalloc"],
          linkopts = ["-pthread"])
cc_binary(name = "trace_driver_libc", srcs = ["trace_driver.c"], local_defines = ["HC_TRACE_LIBC"],
          linkopts = ["-pthread"])
''')
    bin_dir = bazel.info("bazel-bin", "--config=opt")
    found = []
    for name in ("trace_driver", "trace_driver_libc"):
        # One build each: a hand-in's failure must not pass its stale binary off.
        done = bazel.run("build", "--config=opt", f"//grade_traces:{name}")
        binary = os.path.join(bin_dir, "grade_traces", name)
        found.append(binary if done.returncode == 0 and os.path.exists(binary) else None)
    return found


class TraceTimeout(Exception):
    pass


def run_trace(binary, trace):
    """{"ops_per_s", "utilisation"} of one run, or None if it failed;
    TraceTimeout past TRACE_SECONDS."""
    if binary is None:
        return None
    try:
        # The reference runs each trace in well under a second: a deadlock
        # (the opt build has no lock watchdog) must not cost minutes.
        done = subprocess.run([binary, trace], text=True, timeout=TRACE_SECONDS,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise TraceTimeout(trace)
    if done.returncode != 0:
        return None
    _, ops, seconds, held, mapped, cpu = done.stdout.split()
    # Per CPU second, not per wall second: see tools/labs/trace_driver.c.
    return {"ops_per_s": int(ops) / max(float(cpu), 1e-6), "wall_s": float(seconds),
            "utilisation": int(held) / int(mapped) if int(mapped) else None}


def run_trace_or_none(binary, trace):
    try:
        return run_trace(binary, trace)
    except TraceTimeout:
        return None


def median(values):
    values = sorted(values)
    return values[len(values) // 2] if values else None


def run_traces(mine_bin, libc_bin, reps, traces, reference_bin=None):
    """{trace: {"ratio", "utilisation", "mine", "libc", and with a reference
    binary "vs_reference", "reference_utilisation"}, or None if the
    hand-in's trace failed}. Each rep runs the hand-in's binary, the
    reference's (when there is one) and libc's back to back, and their
    ratios are taken then: on a shared machine the load changes from second
    to second, and neighbouring runs see about the same. The median ratio of
    the reps counts (one unlucky rep does not), and the best utilisation of
    each (how tight the allocator can be; a trace with threads varies with
    their interleaving)."""
    out, timeouts = {}, 0
    for trace in traces:
        ratios, vs_ref, utils, ref_utils, best_mine, best_libc = [], [], [], [], None, None
        for _ in range(reps):
            try:
                # Two traces that hung: the hand-in deadlocks (TRACE_SECONDS
                # each would cost the class minutes); the rest count as failed.
                m = run_trace(mine_bin, trace) if timeouts < 2 else None
            except TraceTimeout:
                timeouts, m = timeouts + 1, None
            if m is None:
                ratios = None
                break
            r = run_trace_or_none(reference_bin, trace) if reference_bin else None
            if r is not None:
                vs_ref.append(m["ops_per_s"] / r["ops_per_s"])
                ref_utils.append(r["utilisation"] or 0.0)
            l = run_trace_or_none(libc_bin, trace)
            if l is not None:
                ratios.append(m["ops_per_s"] / l["ops_per_s"])
                best_libc = l if best_libc is None or l["ops_per_s"] > best_libc["ops_per_s"] else best_libc
            utils.append(m["utilisation"] or 0.0)
            best_mine = m if best_mine is None or m["ops_per_s"] > best_mine["ops_per_s"] else best_mine
        if ratios is None:
            out[trace] = None
            continue
        out[trace] = {"ratio": median(ratios), "utilisation": max(utils), "mine": best_mine,
                      "libc": best_libc}
        if vs_ref:
            out[trace].update(vs_reference=median(vs_ref), reference_utilisation=max(ref_utils))
    return out


def load_yardsticks(stage):
    """{trace: {"throughput_vs_libc", "utilisation"}} shipped for `stage`."""
    try:
        with open(YARDSTICKS, encoding="utf-8") as f:
            return json.load(f).get(stage, {})
    except FileNotFoundError:
        return {}


def grade_performance(runs, yardsticks, traces, measured_reference):
    """The index: per trace, the hand-in's throughput and utilisation over
    the reference's. With `measured_reference` (the instructor's grading:
    the reference's binary ran beside the hand-in's, rep by rep) the
    reference is that run; else (a preview in a workspace, which has no
    reference) it is the shipped yardstick, the throughput through each
    one's ratio to libc malloc run here."""
    per_trace = {}
    thr, space = [], []
    bound = lambda x: max(0.0, min(TRACE_INDEX_MAX, x))
    for trace in traces:
        r, y = runs.get(trace), yardsticks.get(trace)
        if measured_reference and r:
            ref = {"throughput_vs_libc": round(r["ratio"] / r["vs_reference"], 3) if r.get("vs_reference")
                   and r["ratio"] else None, "utilisation": r.get("reference_utilisation")}
        elif measured_reference:
            ref = {"throughput_vs_libc": None, "utilisation": None}
        elif y is None:
            raise SystemExit(f"grade: no yardstick for trace {trace} in {YARDSTICKS}: measure them "
                             f"with --reference --perf-only --write-yardsticks")
        else:
            ref = y
        ratio = r["ratio"] if r else None
        if not r:
            t = u = 0.0
        elif measured_reference:
            t = bound(r["vs_reference"]) if r.get("vs_reference") else 0.0
            u = bound(r["utilisation"] / ref["utilisation"]) if ref["utilisation"] else 0.0
        else:
            t = bound(ratio / ref["throughput_vs_libc"]) if ratio else 0.0
            u = bound(r["utilisation"] / ref["utilisation"])
        per_trace[trace] = {"mine": r and r["mine"], "libc": r and r["libc"], "yardstick": ref,
                            "utilisation": round(r["utilisation"], 4) if r else None,
                            "throughput_vs_libc": round(ratio, 3) if ratio else None,
                            "throughput_index": round(t, 3), "space_index": round(u, 3)}
        if trace in SPACE_ONLY:
            per_trace[trace]["throughput_counted"] = False
        else:
            thr.append(t)
        space.append(u)
    t_mean, s_mean = sum(thr) / len(thr), sum(space) / len(space)
    return {
        "traces": per_trace,
        "reference": "measured beside yours, here and now" if measured_reference else
                     "the shipped yardsticks (tools/labs/yardsticks.json)",
        "throughput_index": round(t_mean, 3),
        "space_index": round(s_mean, 3),
        # Points per index are not capped: the category's total is (grade),
        # so throughput gained on some traces makes up space lost on others.
        "points": {"throughput": PERF_WEIGHTS["throughput"] * t_mean,
                   "space": PERF_WEIGHTS["space"] * s_mean},
        "above_reference": round(max(0.0, PERF_WEIGHTS["throughput"] * t_mean +
                                     PERF_WEIGHTS["space"] * s_mean - sum(PERF_WEIGHTS.values())), 2),
    }


def measured_yardsticks(runs, traces):
    """What --write-yardsticks ships: the reference's own figures."""
    out = {}
    for trace in traces:
        r = runs.get(trace)
        if not r or not r["ratio"] or not r["utilisation"]:
            raise SystemExit(f"grade: the reference's {trace} trace failed: no yardstick written")
        out[trace] = {"throughput_vs_libc": round(r["ratio"], 3), "utilisation": round(r["utilisation"], 4)}
    return out


def yardstick_table(stage):
    """The handout's table of the shipped yardsticks (tools/labs/handout_check.py
    checks that LAB.md holds exactly these lines)."""
    y = load_yardsticks(stage)
    rows = ["| trace | what it replays | the reference's ops/s, as a multiple of libc malloc's | "
            "the reference's utilisation |", "|---|---|---|---|"]
    for trace in stage_traces(stage):
        if trace in y:
            rows.append(f"| `{trace}` | {TRACE_ABOUT[trace]} | {y[trace]['throughput_vs_libc']:.2f} | "
                        f"{y[trace]['utilisation']:.2f} |")
    return rows


def handin_files(stage, root):
    import make_lab  # only the clone has it
    files = []
    for path in make_lab.stage_sources(os.path.join(root, stage)):
        if make_lab.regions(path):
            files.append(os.path.relpath(path, root))
    return files


def format_sheet(sheet):
    out = [f"\nhcmalloc grade: {sheet['stage']} ({sheet['mode']})"]
    if sheet.get("first_failure"):
        out.append(f"read first: {sheet['first_failure']}")
    out.append(f"{'group':48} {'tests':>9} {'points':>13}")
    for g in sheet["groups"]:
        given = "  (given code: a quarter weight)" if g.get("weight", 1) < 1 else \
            "  (a stated rule: double weight, all or nothing)" if g.get("rule") else ""
        out.append(f"{g['target']:48} {g['passed']:>4}/{g['total']:<4} {g['points']:6.2f} / "
                   f"{g['max_points']:5.2f}{given}")
        if g.get("not_graded"):
            out.append(f"    (not graded: {g['not_graded']})")
        for failure in g["failures"][:3]:
            out.append(f"    - {failure}")
        if len(g["failures"]) > 3:
            out.append(f"    - ... and {len(g['failures']) - 3} more")
    perf = sheet["performance"]
    out.append(f"performance (the reference: {perf['reference']}; throughput as a multiple of "
               f"libc malloc run here; a trace's index is yours over the reference's, up to "
               f"{TRACE_INDEX_MAX:g})")
    fig = lambda x, fmt: format(x, fmt) if x is not None else "-"
    for trace, t in perf["traces"].items():
        y = t["yardstick"]
        util = fig(t["utilisation"], ".2f")
        rate = f"x{t['throughput_vs_libc']:.2f} libc" if t["throughput_vs_libc"] else "failed"
        counted = "" if t.get("throughput_counted", True) else " (not counted)"
        out.append(f"    {trace:8} {rate:>11} (ref x{fig(y['throughput_vs_libc'], '.2f')}) throughput "
                   f"{t['throughput_index']:.2f}{counted}   utilisation {util} "
                   f"(ref {fig(y['utilisation'], '.2f')}) space {t['space_index']:.2f}")
    for what in ("throughput", "space"):
        out.append(f"{'  ' + what + ' index ' + str(perf[what + '_index']):48} {'':9} "
                   f"{perf['points'][what]:6.2f} / {PERF_WEIGHTS[what]:5.2f}")
    if perf.get("above_reference"):
        out.append(f"  (performance: {perf['above_reference']:.2f} points above the reference's, "
                   f"shown, not counted: the category is capped at {sum(PERF_WEIGHTS.values())})")
    for category, (got, out_of) in sheet["categories"].items():
        out.append(f"  {category:46} {'':9} {got:6.2f} / {out_of:5.2f}")
    out.append(f"{'TOTAL':48} {'':9} {sheet['total']:6.2f} / {sheet['out_of']:5.2f}")
    if "seconds" in sheet:
        out.append(f"(graded in {sheet['seconds']:.0f} s)")
    return "\n".join(out)


def print_sheet(sheet):
    print(format_sheet(sheet))


def grade(bazel, workspace, stage, mode, quick, reps, jobs=1, write_yardsticks=False,
          reference_bin=None, perf_only=False):
    if perf_only:
        groups = []
    else:
        log(f"grade: tests of //{stage}:all in {os.path.basename(workspace)}")
        groups = grade_tests(bazel, workspace, stage, quick, jobs)
    log("grade: performance traces")
    mine_bin, libc_bin = build_drivers(bazel, workspace, stage)
    traces = stage_traces(stage)
    runs = run_traces(mine_bin, libc_bin, reps, traces, reference_bin)
    if write_yardsticks:
        try:
            with open(YARDSTICKS, encoding="utf-8") as f:
                shipped = json.load(f)
        except FileNotFoundError:
            shipped = {}
        shipped[stage] = measured_yardsticks(runs, traces)
        with open(YARDSTICKS, "w", encoding="utf-8") as f:
            json.dump(shipped, f, indent=1, sort_keys=True)
            f.write("\n")
        log(f"grade: yardsticks of {stage} written to {YARDSTICKS}")
    perf = grade_performance(runs, load_yardsticks(stage), traces, reference_bin is not None)
    categories = {}
    for category, weight in (() if perf_only else WEIGHTS.items()):
        members = [g for g in groups if g["category"] == category]
        if members:
            categories[category] = (sum(g["points"] for g in members), weight)
        elif not (quick and category == "flavours"):
            categories[category] = (weight, weight)  # nothing of it in this stage: free points
    categories["performance"] = (min(sum(PERF_WEIGHTS.values()),
                                     perf["points"]["throughput"] + perf["points"]["space"]),
                                 sum(PERF_WEIGHTS.values()))
    total = sum(got for got, _ in categories.values())
    out_of = sum(w for _, w in categories.values())
    # The one line to read first: the best-ranked failure, the stage's own
    # unit tests before the shared suites.
    order = {c: i for i, c in enumerate(WEIGHTS)}
    failing = [(failure_rank(f), order[g["category"]], g["target"], f) for g in groups
               for f in g["failures"][:1]]
    first = min(failing, default=None)
    return {"stage": stage, "mode": mode + (", --quick: flavours not run" if quick else "") +
            (", --perf-only: no tests run" if perf_only else ""),
            "weights": dict(WEIGHTS, **PERF_WEIGHTS), "groups": groups, "performance": perf,
            "categories": categories, "total": round(total, 2), "out_of": out_of,
            "first_failure": f"{first[2]}: {first[3]}" if first else None,
            "percent": round(100 * total / out_of, 1)}


def find_handins(stage, dirs):
    """[(name, folder)]: each DIR with STAGE/ in it, or else each folder in
    DIR that has one (a class's hand-ins side by side)."""
    found = []
    for d in dirs:
        if os.path.isdir(os.path.join(d, stage)):
            found.append((os.path.basename(os.path.abspath(d)), d))
            continue
        inside = sorted(e for e in os.listdir(d) if os.path.isdir(os.path.join(d, e, stage))) \
            if os.path.isdir(d) else []
        if not inside:
            raise SystemExit(f"grade: {d} has no {stage}/ folder, nor any folder that has one")
        found += [(e, os.path.join(d, e)) for e in inside]
    names, out = set(), []
    for name, d in found:
        unique, n = name, 2
        while unique in names:
            unique, n = f"{name}-{n}", n + 1
        names.add(unique)
        out.append((unique, d))
    return out


def write_class_csv(path, sheets):
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        cats = list(WEIGHTS) + ["performance"]
        w.writerow(["handin", "total", "out_of", "percent"] + cats +
                   ["throughput_index", "space_index", "performance_above_reference", "seconds",
                    "groups_failing"])
        for name, sheet in sheets:
            failing = [g["target"].split(":")[1] for g in sheet["groups"] if g["passed"] < g["total"]]
            w.writerow([name, sheet["total"], sheet["out_of"], sheet["percent"]] +
                       [round(sheet["categories"][c][0], 2) if c in sheet["categories"] else "" for c in cats] +
                       [sheet["performance"]["throughput_index"], sheet["performance"]["space_index"],
                        sheet["performance"]["above_reference"],
                        round(sheet.get("seconds", 0)), " ".join(failing)])


def report_sheet(sheet, json_arg):
    """Prints one hand-in's score sheet and writes it as JSON (grade.json
    unless --json names a file); the exit status of a single grading."""
    print_sheet(sheet)
    json_path = os.path.abspath(json_arg or "grade.json")
    with open(json_path, "w", encoding="utf-8") as f:
        json.dump(sheet, f, indent=1)
    print(f"score sheet: {json_path}")
    return 0


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("stage", nargs="?", help="instructor: the lab's stage, e.g. stage2_centralcache")
    parser.add_argument("--handin", metavar="DIR", nargs="+", help="the student's workspace (or any "
                        "folder with the hand-in files at their paths); several, or a folder of them")
    parser.add_argument("--reference", action="store_true", help="grade the reference itself")
    parser.add_argument("--write-yardsticks", action="store_true", help="with --reference: ship "
                        "its trace figures as the stage's yardsticks (tools/labs/yardsticks.json)")
    parser.add_argument("--handin-list", action="store_true", help="print the hand-in files and exit")
    parser.add_argument("--yardstick-table", action="store_true", help="print STAGE's shipped "
                        "yardsticks as the handout's table and exit")
    parser.add_argument("--quick", action="store_true", help="leave out the sanitizer flavours")
    parser.add_argument("--perf-only", action="store_true", help="run the performance traces "
                        "only, no tests (out of 20): comparing policies, measuring yardsticks")
    parser.add_argument("--against-yardsticks", action="store_true", help="instructor: compare "
                        "with the shipped yardsticks instead of running the reference's traces "
                        "beside each hand-in's")
    parser.add_argument("--reps", type=int, default=3, help="runs per trace (best counts)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="googletest cases run at once (default: one per CPU)")
    parser.add_argument("--json", metavar="FILE", help="one hand-in: where to write the score sheet "
                        "(default: grade.json in the current folder)")
    parser.add_argument("--out", metavar="DIR", help="several hand-ins: where to write NAME.json, "
                        "NAME.txt and class.csv (default: grades)")
    parser.add_argument("--scratch", metavar="DIR", help="instructor: grade in DIR (kept: the "
                        "output base stays warm for the next invocation) instead of a temporary folder")
    parser.add_argument("--disk-cache", metavar="DIR", default=os.environ.get("HC_GRADE_DISK_CACHE"),
                        help="a Bazel disk cache shared by every grading run (default: "
                             "$HC_GRADE_DISK_CACHE, else none)")
    args = parser.parse_args(argv)

    if args.yardstick_table:
        print("\n".join(yardstick_table(args.stage or lab_stage(ROOT))))
        return 0
    if args.stage is None:  # a lab workspace: grade it where it stands
        workspace = ROOT
        if args.handin or args.reference or args.handin_list:
            parser.error("--handin, --reference and --handin-list are for the instructor's clone")
        # HC_GRADE_OUTPUT_BASE: reuse a Bazel output base (tools/labs/lab_test.sh does).
        bazel = Bazel(workspace, os.environ.get("HC_GRADE_OUTPUT_BASE"), args.disk_cache)
        try:
            sheet = grade(bazel, workspace, lab_stage(workspace),
                          "preview in the lab workspace, your tests", args.quick, args.reps, args.jobs,
                          perf_only=args.perf_only)
        finally:
            bazel.shutdown()
        return report_sheet(sheet, args.json)

    sys.path.insert(0, TOOLS)
    import make_lab
    root = make_lab.ROOT
    if args.handin_list:
        print("\n".join(handin_files(args.stage, root)))
        return 0
    if not args.handin and not args.reference:
        parser.error("name --handin DIR... or --reference")
    if args.write_yardsticks and not args.reference:
        parser.error("--write-yardsticks goes with --reference")
    handins = [("reference", None)] if args.reference else find_handins(args.stage, args.handin)
    scratch = os.path.abspath(args.scratch) if args.scratch else tempfile.mkdtemp(prefix="hcmalloc-grade.")
    lab = os.path.join(scratch, "lab")
    bazel = Bazel(lab, os.path.join(scratch, "ob-lab"), args.disk_cache)
    batch = len(handins) > 1
    out_dir = os.path.abspath(args.out or "grades") if batch else None
    sheets = []
    try:
        # The class's one reference: its trace driver built once, from this
        # clone's reference, and run beside each hand-in's, rep by rep.
        reference_bin = None
        if not args.reference and not args.against_yardsticks:
            log("grade: the reference's trace driver, run beside every hand-in's")
            make_lab.make_lab(args.stage, lab, reference=True, force=True)
            built = build_drivers(bazel, lab, args.stage)[0]
            if built is None:
                raise SystemExit("grade: the reference's trace driver does not build")
            reference_bin = os.path.join(scratch, "reference_trace_driver")
            shutil.copy2(built, reference_bin)
        for name, folder in handins:
            start = time.time()
            if folder is None:
                make_lab.make_lab(args.stage, lab, reference=True, force=True)
                mode = "the reference"
            else:
                make_lab.make_lab(args.stage, lab, force=True)
                missing = []
                for rel in handin_files(args.stage, root):
                    src = os.path.join(folder, rel)
                    if os.path.exists(src):
                        shutil.copy2(src, os.path.join(lab, rel))
                    else:
                        missing.append(rel)
                if missing:
                    log(f"grade: {name}: not handed in (the skeleton's stays): {', '.join(missing)}")
                mode = f"hand-in {name}, instructor's tests"
            log(f"grade: {name}")
            sheet = grade(bazel, lab, args.stage, mode, args.quick, args.reps, args.jobs,
                          write_yardsticks=args.write_yardsticks, reference_bin=reference_bin,
                          perf_only=args.perf_only)
            sheet["handin"], sheet["seconds"] = name, round(time.time() - start, 1)
            sheets.append((name, sheet))
            if batch:
                os.makedirs(out_dir, exist_ok=True)
                with open(os.path.join(out_dir, f"{name}.json"), "w", encoding="utf-8") as f:
                    json.dump(sheet, f, indent=1)
                with open(os.path.join(out_dir, f"{name}.txt"), "w", encoding="utf-8") as f:
                    f.write(format_sheet(sheet) + "\n")
                log(f"grade: {name}: {sheet['total']:.2f} / {sheet['out_of']} in {sheet['seconds']:.0f} s")
    finally:
        bazel.shutdown()
        if not args.scratch:
            subprocess.run(["chmod", "-R", "u+w", scratch], stderr=subprocess.DEVNULL)
            shutil.rmtree(scratch, ignore_errors=True)
    if batch:
        write_class_csv(os.path.join(out_dir, "class.csv"), sheets)
        for name, sheet in sheets:
            print(f"{name:24} {sheet['total']:6.2f} / {sheet['out_of']}  ({sheet['seconds']:.0f} s)")
        print(f"score sheets and class.csv: {out_dir}")
        return 0
    sheet = sheets[0][1]
    return report_sheet(sheet, args.json)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
