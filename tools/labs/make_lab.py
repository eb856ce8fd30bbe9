#!/usr/bin/env python3
"""tools/labs/make_lab.py — turns one stage of hcmalloc into a lab skeleton.

usage: tools/labs/make_lab.py STAGE OUTDIR [--reference] [--force]
       tools/labs/make_lab.py --list [STAGE]

OUTDIR may be inside the clone (tools/labs/make_lab.py stage2_centralcache lab2)
when .bazelignore names it, as it names lab1 to lab4: Bazel would otherwise
read the lab's BUILD files as packages of this workspace too. It may not be
the clone itself, nor an existing folder with files in it (unless --force).

Writes to OUTDIR a workspace that builds on its own: WORKSPACE, .bazelrc,
common/, tests/, third_party/, tools/setup.sh, every stage before STAGE as
it is, and STAGE with the bodies the lab asks for removed. The lab's handout,
docs/labs/<stage number>.md, becomes OUTDIR/LAB.md. Of docs/, the pages the
sources cite that answer no lab (DOCS: the contract, the drop-in, the
profiler, the benchmarks) and the chapters of the stages before STAGE
(given code) come along; STAGE's own chapter and later ones, later stages,
the labs' notes and the bench stay out: they would give the answers away.
(tools/labs/handout_check.py checks that every docs/ page a workspace file
names is in the workspace.)

A body to remove is marked in the reference source by a pair of comments,
each on a line of its own:

    /* LAB BEGIN: refill */
    ... the reference code ...
    /* LAB END: refill */

In the skeleton the lines from BEGIN to END become one call that stops the
program with a message naming the piece to write, so the skeleton compiles
(hc_fatal is noreturn: no missing return value) and every test that reaches
the piece fails. With --reference the markers are kept and nothing is
removed: the same copy, for checking that the copy itself is complete.
"""

import argparse
import os
import re
import shutil
import sys

# This file is ROOT/tools/labs/make_lab.py.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# What every lab workspace needs besides the stages.
COMMON_PATHS = [
    "WORKSPACE",
    "BUILD",
    ".bazelrc",
    ".gitignore",
    "common",
    "tests",
    "third_party",
    os.path.join("tools", "setup.sh"),
    os.path.join("tools", "config"),  # the --config settings the BUILD files load
    os.path.join("tools", "labs", "grade.py"),
    os.path.join("tools", "labs", "trace_driver.c"),
    os.path.join("tools", "labs", "yardsticks.json"),  # the grade's performance yardsticks
    os.path.join("tools", "labs", "stage_diff.sh"),  # lab 4's handout: what the hooks change
]
# Pages of docs/ that workspace sources cite and that answer no lab.
DOCS = [os.path.join("docs", name) for name in ("design.md", "dropin.md", "profiling.md",
                                                "benchmarks.md")]
SOURCE_SUFFIXES = (".c", ".h", ".cc")
BEGIN = re.compile(r"^(\s*)/\* LAB BEGIN: ([A-Za-z0-9_]+) \*/\s*$")
END = re.compile(r"^\s*/\* LAB END: ([A-Za-z0-9_]+) \*/\s*$")
FATAL_INCLUDE = '#include "common/fatal.h"\n'


class LabError(Exception):
    pass


def stages(root=ROOT):
    """The stage packages, in order: stage1_threadcache, stage2_..., ..."""
    found = [d for d in os.listdir(root)
             if re.match(r"^stage[0-9]+_", d) and os.path.isdir(os.path.join(root, d))]
    return sorted(found, key=lambda d: int(re.match(r"^stage([0-9]+)_", d).group(1)))


def regions(path):
    """[(name, first line, last line)] of the LAB regions in `path` (1-based)."""
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    return _parse(path, lines)


def _parse(path, lines):
    found, open_name, open_line = [], None, 0
    for number, line in enumerate(lines, 1):
        begin, end = BEGIN.match(line), END.match(line)
        if begin:
            if open_name:
                raise LabError(f"{path}:{number}: LAB BEGIN inside region '{open_name}'")
            open_name, open_line = begin.group(2), number
        elif end:
            if end.group(1) != open_name:
                raise LabError(f"{path}:{number}: LAB END: {end.group(1)} does not close "
                               f"{open_name or 'any region'}")
            found.append((open_name, open_line, number))
            open_name = None
        elif "LAB BEGIN" in line or "LAB END" in line:
            raise LabError(f"{path}:{number}: malformed LAB marker: {line.strip()}")
    if open_name:
        raise LabError(f"{path}:{open_line}: LAB BEGIN: {open_name} is never closed")
    return found


def strip(path, relpath, keep=()):
    """Replaces each LAB region of `path` by a stop (except those named in
    `keep`, left written); returns the names of the regions removed."""
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    found = [r for r in _parse(relpath, lines) if r[0] not in keep]
    if not found:
        return []
    out, skip_until = [], 0
    for number, line in enumerate(lines, 1):
        if number <= skip_until:
            continue
        begin = BEGIN.match(line)
        if begin and begin.group(2) not in keep:
            indent, name = begin.group(1), begin.group(2)
            skip_until = next(last for n, first, last in found if first == number)
            out.append(f"{indent}/* LAB {name}: yours to write (see LAB.md). */\n")
            out.append(f'{indent}hc_fatal("lab: {name} in {relpath} is not written yet");\n')
        else:
            out.append(line)
    if FATAL_INCLUDE not in out:
        # After the last common/ include (else the last project include).
        includes = [i for i, l in enumerate(out) if l.startswith('#include "common/')] or \
                   [i for i, l in enumerate(out) if l.startswith('#include "')]
        if not includes:
            raise LabError(f"{relpath}: has LAB regions but no #include to put fatal.h after")
        out.insert(includes[-1] + 1, FATAL_INCLUDE)
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(out)
    return [name for name, _, _ in found]


def bazel_ignores(rel, root=ROOT):
    """Whether `rel` (relative to root) is at or under a line of .bazelignore."""
    try:
        with open(os.path.join(root, ".bazelignore"), encoding="utf-8") as f:
            ignored = [l.strip().rstrip("/") for l in f if l.strip() and not l.startswith("#")]
    except FileNotFoundError:
        return False
    parts = os.path.normpath(rel).split(os.sep)
    return any(os.path.join(*parts[:i]) in ignored for i in range(1, len(parts) + 1))


def _copy(src_root, rel, dst_root):
    src, dst = os.path.join(src_root, rel), os.path.join(dst_root, rel)
    if os.path.isdir(src):
        shutil.copytree(src, dst, symlinks=True,
                        ignore=shutil.ignore_patterns("bazel-*", "__pycache__"))
    elif os.path.exists(src):
        os.makedirs(os.path.dirname(dst) or ".", exist_ok=True)
        shutil.copy2(src, dst)


def stage_sources(stage_dir):
    for dirpath, _, files in os.walk(stage_dir):
        for name in sorted(files):
            if name.endswith(SOURCE_SUFFIXES):
                yield os.path.join(dirpath, name)


def make_lab(stage, outdir, reference=False, force=False, root=ROOT, keep=()):
    all_stages = stages(root)
    if stage not in all_stages:
        raise LabError(f"no stage '{stage}' (have: {', '.join(all_stages)})")
    real_out, real_root = os.path.realpath(outdir), os.path.realpath(root)
    if os.path.commonpath([real_out, real_root]) == real_out:
        raise LabError(f"{outdir} is the repository (or holds it): name a new folder, e.g. lab2")
    if os.path.commonpath([real_out, real_root]) == real_root:
        # Inside the clone is fine if Bazel skips the folder: otherwise the
        # lab's BUILD files would be packages of this workspace too, and
        # `bazel test //...` here would build the skeleton.
        rel = os.path.relpath(real_out, real_root)
        if not bazel_ignores(rel, real_root):
            raise LabError(f"{outdir} is inside the repository and not in .bazelignore: "
                           f"add the line '{rel.split(os.sep)[0]}' to .bazelignore "
                           f"(lab1 to lab4 are there) or generate the lab elsewhere")
    if os.path.exists(outdir) and os.listdir(outdir):
        if not force:
            raise LabError(f"{outdir} is not empty (use --force to replace it)")
        for entry in os.listdir(outdir):
            path = os.path.join(outdir, entry)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)
    os.makedirs(outdir, exist_ok=True)

    for rel in COMMON_PATHS + all_stages[:all_stages.index(stage) + 1]:
        _copy(root, rel, outdir)
    number = re.match(r"^stage([0-9]+)_", stage).group(1)
    for rel in DOCS + [os.path.join("docs", f"stage{k}.md") for k in range(1, int(number))]:
        _copy(root, rel, outdir)
    handout = os.path.join(root, "docs", "labs", f"stage{number}.md")
    if os.path.exists(handout):
        shutil.copy2(handout, os.path.join(outdir, "LAB.md"))

    removed = []
    for path in stage_sources(os.path.join(outdir, stage)):
        rel = os.path.relpath(path, outdir)
        if reference:
            removed += [(rel, name) for name, _, _ in regions(path)]
        else:
            removed += [(rel, name) for name in strip(path, rel, keep)]
    if not removed and not keep:
        raise LabError(f"{stage} has no LAB BEGIN/END markers: nothing for a lab to write")
    return removed


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stage", nargs="?", help="stage package, e.g. stage1_threadcache")
    parser.add_argument("outdir", nargs="?", help="where to write the lab workspace")
    parser.add_argument("--reference", action="store_true",
                        help="copy without removing anything (markers kept)")
    parser.add_argument("--force", action="store_true", help="replace OUTDIR's contents")
    parser.add_argument("--list", action="store_true", help="list the LAB regions and exit")
    parser.add_argument("--keep", metavar="NAME,...", default="",
                        help="leave these regions written (a half-done lab, for testing the grader)")
    args = parser.parse_args(argv)
    try:
        if args.list:
            for stage in [args.stage] if args.stage else stages():
                for path in stage_sources(os.path.join(ROOT, stage)):
                    for name, first, last in regions(path):
                        print(f"{os.path.relpath(path, ROOT)}:{first}-{last}: {name}")
            return 0
        if not args.stage or not args.outdir:
            parser.error("STAGE and OUTDIR are required")
        keep = tuple(n for n in args.keep.split(",") if n)
        removed = make_lab(args.stage, args.outdir, args.reference, args.force, keep=keep)
    except LabError as e:
        print(f"make_lab: {e}", file=sys.stderr)
        return 1
    verb = "kept (reference)" if args.reference else "removed"
    for rel, name in removed:
        print(f"{verb}: {name} in {rel}")
    print(f"lab workspace: {args.outdir}  (cd there; bazel test //{args.stage}:all)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
