#!/usr/bin/env python3
"""tools/grade.py — grades a lab: points per group of tests, and a performance index.

    tools/grade.py                       in a lab workspace: a preview of your grade
    tools/grade.py STAGE --handin DIR    instructor, from the clone: the official grade
    tools/grade.py STAGE --reference     instructor: the reference's own score sheet

Official grading (--handin) never runs the student's tests: it generates a
fresh skeleton of STAGE (tools/make_lab.py, the instructor's tests), copies
in only the hand-in files from DIR (the files of STAGE with LAB regions:
`tools/grade.py STAGE --handin-list` prints them), and grades that. The
preview in a workspace grades the workspace as it stands, its tests
included, and measures throughput against libc malloc, as malloclab's
mdriver does, since the reference is not there to compare with.

Groups. Every test target of //STAGE:all is a group. A googletest target is
run test by test (--gtest_filter), each in its own process with a time
limit, so an hc_fatal or a deadlock costs that test only; other targets
(shell tests, sanitizer flavours) pass or fail as a whole under `bazel
test`. --quick leaves out the flavours (TSan, ASan, Valgrind, debug, the
drop-in's programs): the plain ones first is also the fast way to iterate.

Weights (100 points; --quick grades out of 90 and says so):
    unit         35  the stage's own tests (the layer you wrote)
    conformance  20  the API contract, and memory accounting after every test
    stress        10  threads, random sizes, faults
    reliability    5  bad input, fuzz replay
    flavours      10  TSan, ASan, Valgrind, debug builds (not with --quick)
    performance   20  throughput 10 + space 10, on four fixed traces
Inside a category the points are split evenly between its targets, and a
target's share by the fraction of its tests that pass.

Performance index, per trace (tools/trace_driver.c: churn, ramp, threads,
handoff; best of --reps runs, each a fresh process):
    throughput  min(1, your ops/s / the yardstick's ops/s)
    space       min(1, your utilisation / the reference's), where utilisation
                = peak bytes the trace holds / peak bytes mapped (os_mapped_bytes)
averaged over the traces. A trace that crashes scores 0 for both.

The score sheet is printed and written as JSON (--json, default
grade.json in the graded folder's parent... see --json).
"""

import argparse
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

WEIGHTS = {"unit": 35, "conformance": 20, "stress": 10, "reliability": 5, "flavours": 10}
PERF_WEIGHTS = {"throughput": 10, "space": 10}
TRACES = ["churn", "ramp", "threads", "handoff"]
FLAVOUR = re.compile(r"(_tsan|_asan|_valgrind|_debug_test|:debug_test|:dropin_[a-z_]+|:fork_test|"
                     r"_programs_test)$")
# Tests of one reference policy that a lab leaves to the student: run and
# shown, not counted (docs/labs/stage2.md: the policy is the lesson).
NOT_GRADED = {"stage2_centralcache": {"CentralCache.SlowStartGrowsTheBatchOneByOneThenByBatches"}}
TEST_SECONDS = 60  # per googletest case: the lock watchdog fires at 10 s


def log(msg):
    print(msg, file=sys.stderr, flush=True)


class Bazel:
    def __init__(self, workspace, output_base=None):
        self.workspace, self.output_base = workspace, output_base

    def run(self, *args, check=False, quiet=True):
        # HC_BAZEL_DISK_CACHE (tools/test.sh sets it): share byte-identical
        # actions (googletest, unchanged files) with the main tree's builds.
        cache = os.environ.get("HC_BAZEL_DISK_CACHE")
        reuse = [f"--disk_cache={cache}"] if cache and args[0] in ("build", "test") else []
        cmd = ["bazel"] + ([f"--output_base={self.output_base}"] if self.output_base else []) + \
              [args[0], "--color=no", "--curses=no", "--noshow_progress"] + reuse + list(args[1:])
        done = subprocess.run(cmd, cwd=self.workspace, text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT if quiet else None)
        if check and done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stdout[-3000:]}")
        return done

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
        kind, label = head.group(1), f"//{stage}:{name.group(1)}"
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


def run_case(binary, case, env, cwd):
    try:
        done = subprocess.run([binary, f"--gtest_filter={case}"], env=env, cwd=cwd, text=True,
                              timeout=TEST_SECONDS, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if done.returncode == 0 and "[  SKIPPED ] 1 test" in done.stdout:
            return None, "skipped"  # a feature of a later stage: not counted
        ok = done.returncode == 0 and "[  PASSED  ] 1 test" in done.stdout
        why = "" if ok else (done.stdout.strip().splitlines() or ["(no output)"])[-1][:160]
        if not ok and done.returncode < 0:
            why = f"killed by signal {-done.returncode}: " + why
        return ok, why
    except subprocess.TimeoutExpired:
        return False, f"timed out after {TEST_SECONDS} s"


def grade_tests(bazel, workspace, stage, quick):
    targets = [t for t in test_targets(bazel, stage) if not (quick and t[2] == "flavours")]
    cc = [t[0] for t in targets if t[1] in ("cc_test", "gtest")]
    build = bazel.run("build", "--keep_going", *cc)
    # Not the bazel-bin link: a later build in another configuration moves it.
    bin_dir = bazel.run("info", "bazel-bin", check=True).stdout.strip().splitlines()[-1]
    groups = []
    for label, kind, category, env in targets:
        name = label.split(":")[1]
        group = {"target": label, "category": category, "passed": 0, "total": 1, "failures": []}
        binary = os.path.join(bin_dir, stage, name)
        cases = gtest_cases(binary, dict(os.environ, **env)) if kind == "gtest" and \
            os.path.exists(binary) else None
        if kind in ("cc_test", "gtest") and not os.path.exists(binary):
            group["failures"].append("does not build" if build.returncode else "no binary")
        elif cases:
            run_env = dict(os.environ, **env)
            tmp = tempfile.mkdtemp(prefix="grade-test.")
            run_env["TEST_TMPDIR"] = tmp
            runfiles = binary + ".runfiles"
            # As `bazel test` would: in the main repository's runfiles.
            main_repo = os.path.join(runfiles, os.path.basename(os.path.dirname(os.path.dirname(
                os.path.dirname(bin_dir)))))
            cwd = main_repo if os.path.isdir(main_repo) else workspace
            if os.path.isdir(runfiles):
                run_env["RUNFILES_DIR"] = runfiles
            group["total"] = 0
            for case in cases:
                ok, why = run_case(binary, case, run_env, cwd)
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
        else:
            done = bazel.run("test", "--test_output=errors", label)
            group["passed"] = int(done.returncode == 0)
            if done.returncode != 0:
                group["failures"].append(f"bazel test exit {done.returncode}")
        log(f"  {label}: {group['passed']}/{group['total']}")
        groups.append(group)
    for category, weight in WEIGHTS.items():
        members = [g for g in groups if g["category"] == category]
        for g in members:
            g["max_points"] = weight / len(members)
            g["points"] = g["max_points"] * g["passed"] / g["total"] if g["total"] else g["max_points"]
    return groups


def build_driver(bazel, workspace, stage, libc=False):
    """Builds tools/trace_driver.c against //stage:hcmalloc (or libc) in a
    package of its own; returns the binary's path."""
    pkg = os.path.join(workspace, "grade_traces")
    os.makedirs(pkg, exist_ok=True)
    shutil.copy2(os.path.join(TOOLS, "trace_driver.c"), pkg)
    with open(os.path.join(pkg, "BUILD"), "w", encoding="utf-8") as f:
        f.write(f'''# Written by tools/grade.py: the performance traces.
cc_binary(name = "trace_driver", srcs = ["trace_driver.c"], deps = ["//{stage}:hcmalloc"],
          linkopts = ["-pthread"])
cc_binary(name = "trace_driver_libc", srcs = ["trace_driver.c"], local_defines = ["HC_TRACE_LIBC"],
          linkopts = ["-pthread"])
''')
    name = "trace_driver_libc" if libc else "trace_driver"
    done = bazel.run("build", "--config=opt", f"//grade_traces:{name}")
    bin_dir = bazel.run("info", "--config=opt", "bazel-bin", check=True).stdout.strip().splitlines()[-1]
    binary = os.path.join(bin_dir, "grade_traces", name)
    return binary if done.returncode == 0 and os.path.exists(binary) else None


def run_trace(binary, trace):
    """{"ops_per_s", "utilisation"} of one run, or None if it failed."""
    if binary is None:
        return None
    try:
        done = subprocess.run([binary, trace], text=True, timeout=120,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0:
        return None
    _, ops, seconds, held, mapped = done.stdout.split()
    return {"ops_per_s": int(ops) / max(float(seconds), 1e-9),
            "utilisation": int(held) / int(mapped) if int(mapped) else None}


def run_traces(binaries, reps):
    """[{trace: best run or None}] for each binary. The binaries take turns,
    run by run, so a machine that gets busier slows them alike."""
    best = [dict.fromkeys(TRACES) for _ in binaries]
    failed = [set() for _ in binaries]
    for trace in TRACES:
        for _ in range(reps):
            for i, binary in enumerate(binaries):
                if trace in failed[i]:
                    continue
                run = run_trace(binary, trace)
                if run is None:
                    failed[i].add(trace)
                    best[i][trace] = None
                elif best[i][trace] is None or run["ops_per_s"] > best[i][trace]["ops_per_s"]:
                    best[i][trace] = run
    return best


def grade_performance(mine, yardstick, space_reference):
    per_trace = {}
    thr, space = [], []
    for trace in TRACES:
        m, y, r = mine.get(trace), yardstick.get(trace), space_reference.get(trace)
        t = min(1.0, m["ops_per_s"] / y["ops_per_s"]) if m and y else 0.0
        if m and r and r.get("utilisation"):
            s = min(1.0, (m["utilisation"] or 0) / r["utilisation"])
        elif m and m.get("utilisation") is not None:
            s = min(1.0, m["utilisation"] / 0.5)  # preview: full marks at 50 % utilisation
        else:
            s = 0.0
        per_trace[trace] = {"mine": m, "yardstick": y, "throughput_index": round(t, 3),
                            "space_index": round(s, 3)}
        thr.append(t)
        space.append(s)
    return {
        "traces": per_trace,
        "throughput_index": round(sum(thr) / len(thr), 3),
        "space_index": round(sum(space) / len(space), 3),
        "points": {"throughput": PERF_WEIGHTS["throughput"] * sum(thr) / len(thr),
                   "space": PERF_WEIGHTS["space"] * sum(space) / len(space)},
    }


def handin_files(stage, root):
    import make_lab  # only the clone has it
    files = []
    for path in make_lab.stage_sources(os.path.join(root, stage)):
        if make_lab.regions(path):
            files.append(os.path.relpath(path, root))
    return files


def print_sheet(sheet):
    print(f"\nhcmalloc grade: {sheet['stage']} ({sheet['mode']})")
    print(f"{'group':48} {'tests':>9} {'points':>13}")
    for g in sheet["groups"]:
        print(f"{g['target']:48} {g['passed']:>4}/{g['total']:<4} {g['points']:6.2f} / {g['max_points']:5.2f}")
        if g.get("not_graded"):
            print(f"    (not graded: {g['not_graded']})")
        for failure in g["failures"][:3]:
            print(f"    - {failure}")
        if len(g["failures"]) > 3:
            print(f"    - ... and {len(g['failures']) - 3} more")
    perf = sheet["performance"]
    print(f"{'performance (yardstick: ' + perf['yardstick'] + ')':48}")
    for trace, t in perf["traces"].items():
        m = t["mine"]
        util = f"{m['utilisation']:.2f}" if m and m.get("utilisation") is not None else "-"
        rate = f"{m['ops_per_s'] / 1e6:.1f} Mops/s" if m else "failed"
        print(f"    {trace:10} {rate:>14}  throughput {t['throughput_index']:.2f}  "
              f"utilisation {util}  space {t['space_index']:.2f}")
    print(f"{'  throughput index ' + str(perf['throughput_index']):48} {'':9} "
          f"{perf['points']['throughput']:6.2f} / {PERF_WEIGHTS['throughput']:5.2f}")
    print(f"{'  space index ' + str(perf['space_index']):48} {'':9} "
          f"{perf['points']['space']:6.2f} / {PERF_WEIGHTS['space']:5.2f}")
    for category, (got, out_of) in sheet["categories"].items():
        print(f"  {category:46} {'':9} {got:6.2f} / {out_of:5.2f}")
    print(f"{'TOTAL':48} {'':9} {sheet['total']:6.2f} / {sheet['out_of']:5.2f}")


def grade(workspace, stage, mode, quick, reps, reference_ws=None, keep_servers=False, output_bases=None):
    output_bases = output_bases or {}
    bazel = Bazel(workspace, output_bases.get("lab"))
    try:
        log(f"grade: tests of //{stage}:all in {workspace}")
        groups = grade_tests(bazel, workspace, stage, quick)
        log("grade: performance traces")
        mine_bin = build_driver(bazel, workspace, stage)
        if reference_ws is None:
            yard_name = "libc malloc (preview)"
            mine, yardstick = run_traces([mine_bin, build_driver(bazel, workspace, stage, libc=True)], reps)
            space_ref = {}
        elif reference_ws == workspace:
            yard_name = "the reference (itself)"
            mine, = run_traces([mine_bin], reps)
            yardstick = space_ref = mine
        else:
            ref = Bazel(reference_ws, output_bases.get("reference"))
            try:
                yard_name = "the reference"
                mine, yardstick = run_traces([mine_bin, build_driver(ref, reference_ws, stage)], reps)
                space_ref = yardstick
            finally:
                if not keep_servers:
                    ref.shutdown()
        perf = grade_performance(mine, yardstick, space_ref)
    finally:
        if not keep_servers:
            bazel.shutdown()
    perf["yardstick"] = yard_name
    categories = {}
    for category, weight in WEIGHTS.items():
        members = [g for g in groups if g["category"] == category]
        if members:
            categories[category] = (sum(g["points"] for g in members), weight)
        elif not (quick and category == "flavours"):
            categories[category] = (weight, weight)  # nothing of it in this stage: free points
    categories["performance"] = (perf["points"]["throughput"] + perf["points"]["space"],
                                 sum(PERF_WEIGHTS.values()))
    total = sum(got for got, _ in categories.values())
    out_of = sum(w for _, w in categories.values())
    return {"stage": stage, "mode": mode + (", --quick: flavours not run" if quick else ""),
            "weights": dict(WEIGHTS, **PERF_WEIGHTS), "groups": groups, "performance": perf,
            "categories": categories, "total": round(total, 2), "out_of": out_of,
            "percent": round(100 * total / out_of, 1)}


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("stage", nargs="?", help="instructor: the lab's stage, e.g. stage2_centralcache")
    parser.add_argument("--handin", metavar="DIR", help="the student's workspace (or any folder "
                        "with the hand-in files at their paths)")
    parser.add_argument("--reference", action="store_true", help="grade the reference itself")
    parser.add_argument("--handin-list", action="store_true", help="print the hand-in files and exit")
    parser.add_argument("--quick", action="store_true", help="leave out the sanitizer flavours")
    parser.add_argument("--reps", type=int, default=3, help="runs per trace (best counts)")
    parser.add_argument("--json", metavar="FILE", help="where to write the score sheet "
                        "(default: grade.json in the current folder)")
    parser.add_argument("--scratch", metavar="DIR", help="instructor: grade in DIR (reused between "
                        "runs: builds stay incremental) instead of a fresh temporary folder")
    args = parser.parse_args(argv)
    json_path = os.path.abspath(args.json or "grade.json")

    if args.stage is None:  # a lab workspace: grade it where it stands
        workspace = os.path.dirname(TOOLS)
        if args.handin or args.reference or args.handin_list:
            parser.error("--handin, --reference and --handin-list are for the instructor's clone")
        # HC_GRADE_OUTPUT_BASE: reuse a Bazel output base (tools/lab_test.sh does).
        sheet = grade(workspace, lab_stage(workspace), "preview in the lab workspace, your tests",
                      args.quick, args.reps,
                      output_bases={"lab": os.environ.get("HC_GRADE_OUTPUT_BASE")})
    else:
        sys.path.insert(0, TOOLS)
        import make_lab
        root = make_lab.ROOT
        if args.handin_list:
            print("\n".join(handin_files(args.stage, root)))
            return 0
        if not args.handin and not args.reference:
            parser.error("name --handin DIR or --reference")
        scratch = os.path.abspath(args.scratch) if args.scratch else tempfile.mkdtemp(prefix="hcmalloc-grade.")
        lab, ref = os.path.join(scratch, "lab"), os.path.join(scratch, "reference")
        bases = {"lab": os.path.join(scratch, "ob-lab"), "reference": os.path.join(scratch, "ob-ref")}
        try:
            if args.reference:
                make_lab.make_lab(args.stage, lab, reference=True, force=True)
                mode, reference_ws = "the reference", lab
            else:
                make_lab.make_lab(args.stage, lab, force=True)
                missing = []
                for rel in handin_files(args.stage, root):
                    src = os.path.join(args.handin, rel)
                    if os.path.exists(src):
                        shutil.copy2(src, os.path.join(lab, rel))
                    else:
                        missing.append(rel)
                if missing:
                    log(f"grade: not handed in (the skeleton's stays): {', '.join(missing)}")
                make_lab.make_lab(args.stage, ref, reference=True, force=True)
                mode, reference_ws = f"hand-in {os.path.abspath(args.handin)}, instructor's tests", ref
            sheet = grade(lab, args.stage, mode, args.quick, args.reps, reference_ws,
                          output_bases=bases)
        finally:
            if not args.scratch:
                subprocess.run(["chmod", "-R", "u+w", scratch], stderr=subprocess.DEVNULL)
                shutil.rmtree(scratch, ignore_errors=True)
    print_sheet(sheet)
    with open(json_path, "w", encoding="utf-8") as f:
        json.dump(sheet, f, indent=1)
    print(f"score sheet: {json_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
