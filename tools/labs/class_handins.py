#!/usr/bin/env python3
"""tools/labs/class_handins.py — the hand-ins a class would produce, for testing the grader.

usage: tools/labs/class_handins.py STAGE OUTDIR     writes OUTDIR/NAME/STAGE/... per hand-in
       tools/labs/class_handins.py --list [STAGE]

For each lab: the reference; a correct but naive design (a choice the
handout leaves open, made badly); where there is one, an alternative
design (a choice made differently and defensibly); a half-done state (tools/labs/make_lab.py
--keep: some pieces written, the rest still the skeleton's hc_fatal); and
the natural bugs, each one of tools/labs/mutants.py's (so the test that must
catch it is named there). `tools/labs/grade.py STAGE --handin OUTDIR` then
grades them all (one sheet each, class.csv); docs/labs/instructors.md
shows the table it gives, per lab.
"""

import argparse
import os
import shutil
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_lab  # noqa: E402
import mutants  # noqa: E402

# Correct designs that a layer leaves open, chosen badly: (name, stage, file,
# old, new, what). Not bugs: no test must fail; the performance index may.
NAIVE = [
    # (Not one object: an odd count of 8-byte objects leaves the chunk's
    # cursor off 16-byte alignment, and the next class's objects with it --
    # a bug, which the stress test's alignment check catches.)
    ("naive_refill_two", "stage1_threadcache", "thread_cache.c",
     "    uint32_t n = sc_batch(cls);", "    uint32_t n = sc_batch(cls) < 2 ? sc_batch(cls) : 2;",
     "a refill carves two objects (no batch)"),
    ("naive_no_slow_start", "stage2_centralcache", "thread_cache.c",
     "    if (limit < batch)\n        tc_raise_limit(tc, cls, limit + 1);",
     "    if (limit < batch)\n        tc_raise_limit(tc, cls, batch);",
     "no slow start: a list's limit jumps to a whole batch at once"),
    ("naive_keep_every_span", "stage3_pagecache", "central_cache.c",
     "        cc_return_to_spans(cls, first, n, cc_spares_kept(cls));",
     "        cc_return_to_spans(cls, first, n, (size_t)1 << 30);",
     "every empty span stays in its bucket (never back to the page cache)"),
    ("naive_steal_every_refusal", "stage4_reclaim", "budget.c",
     "#define TC_STEAL_BACKOFF  64u", "#define TC_STEAL_BACKOFF  1u",
     "a refused claim sweeps every time (no back-off)"),
]

# Correct designs that differ from the reference's by a considered choice:
# (name, stage, file, old, new, what). No test must fail; the index shows
# where the choice pays and where it costs (docs/labs/instructors.md).
ALTERNATIVE = [
    ("alt_doubling_slow_start", "stage2_centralcache", "thread_cache.c",
     "    if (limit < batch)\n        tc_raise_limit(tc, cls, limit + 1);",
     "    if (limit < batch)\n        tc_raise_limit(tc, cls, limit == 0 ? 1 : 2 * limit < batch ? 2 * limit : batch);",
     "slow start that doubles the limit below a batch (1, 2, 4, ... 32), not + 1"),
]

# (stage, half-done: the pieces written, the bugs: mutant names)
CLASS = {
    "stage1_threadcache": ("fast_path_pop,fast_path_push,create_cache",
                           ["refill_drops_batch", "carved_not_counted", "push_ignores_limit"]),
    "stage2_centralcache": ("central_fetch,central_return,slow_start,refill_from_central",
                            ["fetch_drops_span_rest", "overflow_returns_all", "carve_under_lock",
                             "refill_keeps_returned", "scavenge_keeps_ran_dry", "span_race_is_enomem"]),
    "stage3_pagecache": ("page_map_lookup,page_map_insert,split,merge,free_dispatch",
                         ["merge_left_only", "span_never_returned", "give_back_under_lock",
                          "page_map_relaxed_publish", "split_loses_tail"]),
    "stage4_reclaim": ("parse_size,budget_reserve,budget_steal",
                       ["exit_keeps_objects", "exit_keeps_share", "busy_thread_stolen_from",
                        "never_steal_share"]),
}


def write_edit(stage, rel, old, new, outdir):
    for path in make_lab.stage_sources(os.path.join(make_lab.ROOT, stage)):
        out = os.path.join(outdir, os.path.relpath(path, make_lab.ROOT))
        os.makedirs(os.path.dirname(out), exist_ok=True)
        shutil.copy2(path, out)
    if rel is None:
        return
    path = os.path.join(outdir, stage, rel)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if text.count(old) != 1:
        raise SystemExit(f"class_handins: the edit of {stage}/{rel} is stale: update it")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace(old, new))


def handins(stage):
    """[(name, what, writer(outdir))] for `stage`."""
    keep, bugs = CLASS[stage]
    out = [("reference", "the reference", lambda d: write_edit(stage, None, None, None, d))]
    for name, st, rel, old, new, what in NAIVE:
        if st == stage:
            out.append((name, "naive: " + what, lambda d, r=rel, o=old, n=new: write_edit(stage, r, o, n, d)))
    for name, st, rel, old, new, what in ALTERNATIVE:
        if st == stage:
            out.append((name, "alternative: " + what,
                        lambda d, r=rel, o=old, n=new: write_edit(stage, r, o, n, d)))
    missing = [n for n, *_ in [(r[0],) for r in make_lab_regions(stage)] if n not in keep.split(",")]
    out.append(("half_done", "half done: " + ", ".join(missing) + " not written",
                lambda d: make_lab.make_lab(stage, d, force=True, keep=tuple(keep.split(",")))))
    for bug in bugs:
        m = next(m for m in mutants.MUTANTS if m[0] == bug)
        out.append((bug, "bug: " + m[7], lambda d, m=m: write_edit(stage, m[2], m[3], m[4], d)))
    return out


def make_lab_regions(stage):
    found = []
    for path in make_lab.stage_sources(os.path.join(make_lab.ROOT, stage)):
        found += make_lab.regions(path)
    return found


def table(handins_dir, grades_dir):
    """The separation table of docs/labs/instructors.md, from a graded class."""
    import json
    sheets = {}
    for name in sorted(os.listdir(grades_dir)):
        if name.endswith(".json"):
            with open(os.path.join(grades_dir, name), encoding="utf-8") as f:
                sheets[name[:-5]] = json.load(f)
    rows = ["| hand-in | what | groups that lose points (tests passed) | throughput | space | "
            "total | seconds |", "|---|---|---|---|---|---|---|"]
    for name, sheet in sorted(sheets.items(), key=lambda kv: -kv[1]["total"]):
        what_path = os.path.join(handins_dir, f"{name}.what")
        what = open(what_path, encoding="utf-8").read().strip() if os.path.exists(what_path) else ""
        lost = [f"`{g['target'].split(':')[1]}` {g['passed']}/{g['total']}" for g in sheet["groups"]
                if g["passed"] < g["total"]]
        perf = sheet["performance"]
        shown = ", ".join(lost[:4]) + (f", and {len(lost) - 4} more" if len(lost) > 4 else "")
        rows.append(f"| `{name}` | {what} | {shown or 'none'} | "
                    f"{perf['throughput_index']:.2f} | {perf['space_index']:.2f} | "
                    f"{sheet['total']:.1f} / {sheet['out_of']} | {sheet.get('seconds', 0):.0f} |")
    return rows


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stage", nargs="?")
    parser.add_argument("outdir", nargs="?")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--only", metavar="NAME,...", help="write only these hand-ins")
    parser.add_argument("--table", metavar="GRADES", help="print the separation table of the "
                        "class in OUTDIR as graded into GRADES (tools/labs/grade.py --out) and exit")
    args = parser.parse_args(argv)
    if args.table:
        print("\n".join(table(args.outdir, args.table)))
        return 0
    stages = [args.stage] if args.stage else list(CLASS)
    if args.list:
        for stage in stages:
            for name, what, _ in handins(stage):
                print(f"{stage:20} {name:28} {what}")
        return 0
    if not args.stage or not args.outdir:
        parser.error("STAGE and OUTDIR are required")
    chosen = [h for h in handins(args.stage) if not args.only or h[0] in args.only.split(",")]
    for name, what, write in chosen:
        d = os.path.join(args.outdir, name)
        if os.path.exists(d):
            shutil.rmtree(d)
        write(d)
        with open(os.path.join(args.outdir, f"{name}.what"), "w", encoding="utf-8") as f:
            f.write(what + "\n")
    print(f"class_handins: {len(chosen)} hand-ins of {args.stage} in {args.outdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
