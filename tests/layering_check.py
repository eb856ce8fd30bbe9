#!/usr/bin/env python3
"""tests/layering_check.py FILE... — each stage holds its own layer.

The arguments are the sources of common/ and of every stage package, the
static archives of every stage, and the BUILD files that set preprocessor
flags: each stage's, common's and tests/flavours.bzl (bazel passes them:
tests/BUILD). Four rules (docs/design.md, "Layers and hooks"):

  1. No source file of a stage shares more than MAX_SHARE of its non-blank
     lines with the file of the same name in an earlier stage. A later
     stage changes an earlier layer through hooks that layer calls; a
     changed copy is right only where most of the file changes, and then
     the diff is the lesson (tools/labs/stage_diff.sh).
  2. Nothing in common/ names what only a stage defines: common/ is shared
     by every stage unchanged, so it cannot know which stages exist. Its
     code (comments and strings aside: the trace names its events in
     words) may name the public API it declares, and nothing a stage's
     archive defines that common's does not.
  3. No source of a stage tests a preprocessor flag that only a later
     stage's BUILD sets (`#if HC_X`, `defined(HC_X)`, `HC_X && ...`): the
     earlier stage would compile code it never builds, and read the later
     layer's concern. A later stage changes it through a hook header its
     BUILD picks instead (stage3_pagecache/block_hooks.h). The flags are
     read from the BUILD files: string literals "NAME=VALUE" and "-DNAME"
     (defines, local_defines, copts); a flag that common/BUILD or a build
     flavour (tests/flavours.bzl) also sets is every stage's.
  4. No allocator source (a .c or .h of common/ or of a stage package that
     is not a test) has more than MAX_SOURCE_LINES non-blank lines: a file
     a reader holds at once holds one concern; a bigger one is split by
     concern (stage3_pagecache/span_treap.c, stage4_reclaim/profile_*.c).
Before the checks, a self-test plants such flags in made-up stages and
fails unless rule 3 catches each (a check that cannot fail is no check).
"""

import difflib
import os
import re
import subprocess
import sys

MAX_SHARE = 0.40
MAX_SOURCE_LINES = 600
SOURCE_SUFFIXES = (".c", ".h", ".cc")
STAGE_DIR = re.compile(r"(^|/)(stage([0-9]+)_[a-z_]+)/([^/]+)$")
COMMON_FILE = re.compile(r"(^|/)common/([^/]+)$")
STAGE_BUILD = re.compile(r"(^|/)(stage([0-9]+)_[a-z_]+)(/[^/]+)*/(BUILD|[^/]+\.bzl)$")
BUILD_FILE = re.compile(r"(^|/)(BUILD|[^/]+\.bzl)$")
# A flag a BUILD file sets: "NAME=VALUE" (defines, local_defines) or "-DNAME[=VALUE]" (copts).
FLAG_LITERAL = re.compile(r'"(?:-D)?([A-Z][A-Z0-9_]*)=[^"]*"|"-D([A-Z][A-Z0-9_]*)"')
IDENTIFIER = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")


def non_blank_lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


def shared_lines(old, new):
    """Lines of `new` that stand, in order, in `old` too (difflib's matching
    blocks: a line moved far away counts once at most)."""
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    return sum(block.size for block in matcher.get_matching_blocks())


def check_copies(stage_files):
    """stage_files: {(stage number, stage dir): {name: path}}."""
    failures, rows = [], []
    stages = sorted(stage_files)
    for i, (number, stage) in enumerate(stages):
        for name, path in sorted(stage_files[(number, stage)].items()):
            for _, earlier in stages[:i]:
                old_path = stage_files[(_, earlier)].get(name)
                if old_path is None:
                    continue
                new, old = non_blank_lines(path), non_blank_lines(old_path)
                share = shared_lines(old, new) / max(len(new), 1)
                rows.append(f"  {stage}/{name} vs {earlier}/{name}: {share:.0%} of {len(new)} lines")
                if share > MAX_SHARE:
                    failures.append(
                        f"FAIL: {stage}/{name} shares {share:.0%} of its {len(new)} non-blank lines "
                        f"with {earlier}/{name} (at most {MAX_SHARE:.0%}): change the earlier layer "
                        f"through a hook it calls instead of copying its file")
    return failures, rows


def strip_comments_and_strings(text):
    pattern = re.compile(r'//[^\n]*|/\*.*?\*/|"(\\.|[^"\\\n])*"|\'(\\.|[^\'\\\n])*\'', re.S)
    return pattern.sub(" ", text)


def defined_symbols(archive):
    """The globals `archive` defines (a static function of a header, emitted
    in a stage's object, is nobody's name to take)."""
    out = subprocess.run(["nm", "-g", "--defined-only", archive], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    return {fields[2] for fields in (line.split() for line in out.splitlines()) if len(fields) == 3}


def check_common(common_files, common_archives, stage_archives):
    if not stage_archives or not common_archives:
        return ["FAIL: no archives given: is tests/BUILD passing them?"]
    only_stages = set()
    for archive in stage_archives:
        only_stages |= defined_symbols(archive)
    for archive in common_archives:
        only_stages -= defined_symbols(archive)
    failures = []
    # The public API: what common/hcmalloc.h declares, every stage defines.
    public = set()
    if "hcmalloc.h" in common_files:
        with open(common_files["hcmalloc.h"], encoding="utf-8") as f:
            public = set(re.findall(r"\b[A-Za-z_][A-Za-z0-9_]*\b", strip_comments_and_strings(f.read())))
    for name, path in sorted(common_files.items()):
        with open(path, encoding="utf-8") as f:
            code = strip_comments_and_strings(f.read())
        named = set(re.findall(r"\b[A-Za-z_][A-Za-z0-9_]*\b", code)) & only_stages - public
        for symbol in sorted(named):
            failures.append(f"FAIL: common/{name} names {symbol}, which only a stage defines")
    return failures


def flags_set_by(build_text):
    """The preprocessor flags a BUILD (or .bzl) file's text sets; its # comments aside."""
    code = re.sub(r'"(?:\\.|[^"\\\n])*"|#[^\n]*',
                  lambda m: m.group(0) if m.group(0).startswith('"') else " ", build_text)
    return {a or b for a, b in FLAG_LITERAL.findall(code)}


def check_later_flags(stage_sources, stage_builds, shared_builds):
    """stage_sources: {(number, stage dir): {name: text}}; stage_builds:
    {(number, stage dir): [BUILD text]}; shared_builds: [text] of the BUILD
    files whose flags every stage may test."""
    shared = set()
    for text in shared_builds:
        shared |= flags_set_by(text)
    first_stage = {}  # flag -> (number, stage dir) of the earliest stage whose BUILD sets it
    for key in sorted(stage_builds):
        for text in stage_builds[key]:
            for flag in flags_set_by(text) - shared:
                first_stage.setdefault(flag, key)
    failures = []
    for (number, stage), files in sorted(stage_sources.items()):
        for name, text in sorted(files.items()):
            used = set(IDENTIFIER.findall(strip_comments_and_strings(text)))
            for flag in sorted(used & set(first_stage)):
                later_number, later_stage = first_stage[flag]
                if later_number > number:
                    failures.append(
                        f"FAIL: {stage}/{name} tests {flag}, which only a later stage's BUILD sets "
                        f"({later_stage}): compile the later layer's code in through a hook header "
                        f"its BUILD picks (stage3_pagecache/block_hooks.h is the pattern)")
    return failures, sorted(first_stage)


def self_test():
    """Rule 3 on made-up stages: each planted case must fail, each innocent one pass."""
    later_build = 'cc_library(name = "x", local_defines = ["HC_PLANTED=1"], copts = ["-DHC_PLANTED_COPT"])'
    planted = {
        "#if HC_PLANTED": "#if HC_PLANTED\nint x;\n#endif\n",
        "#ifdef HC_PLANTED": "#ifdef HC_PLANTED\nint x;\n#endif\n",
        "defined(HC_PLANTED)": "#if defined(HC_PLANTED) && 1\nint x;\n#endif\n",
        "HC_PLANTED && in code": "int f(int y) { return HC_PLANTED && y; }\n",
        "a -D copt's flag": "#ifndef HC_PLANTED_COPT\n#endif\n",
    }
    innocent = {
        "the flag in a comment": "/* #if HC_PLANTED: stage 4's */\nint x;\n",
        "the flag in a string": 'const char *s = "HC_PLANTED";\n',
        "a flag the stage's own BUILD sets": "#if HC_OWN\n#endif\n",
    }
    builds = {(3, "stage3_x"): ['cc_library(local_defines = ["HC_OWN=1"])  # "HC_COMMENTED=1"'],
              (4, "stage4_y"): [later_build]}
    problems = []
    for what, text in planted.items():
        failures, _ = check_later_flags({(3, "stage3_x"): {"planted.c": text}}, builds, [])
        if not failures:
            problems.append(f"self-test: rule 3 passed a planted {what} in a stage 3 file")
    for what, text in innocent.items():
        failures, _ = check_later_flags({(3, "stage3_x"): {"innocent.c": text}}, builds, [])
        if failures:
            problems.append(f"self-test: rule 3 failed on {what}: {failures[0]}")
    # A flag a flavour also sets (as the hardened build does) is every stage's.
    failures, _ = check_later_flags({(3, "stage3_x"): {"f.c": "#if HC_PLANTED\n#endif\n"}}, builds,
                                    ['copts = ["-DHC_PLANTED=1"]'])
    if failures:
        problems.append("self-test: rule 3 failed on a flag a flavour sets for every stage")
    if "HC_COMMENTED" in flags_set_by(builds[(3, "stage3_x")][0]):
        problems.append("self-test: a flag in a BUILD comment was read as set")
    return problems, len(planted) + len(innocent) + 2


def check_file_sizes(source_paths):
    """Rule 4: every allocator source within MAX_SOURCE_LINES non-blank lines."""
    failures, largest = [], (0, "")
    for path in source_paths:
        name = os.path.basename(path)
        if not name.endswith((".c", ".h")) or re.search(r"_test\.[ch]$", name):
            continue
        lines = len(non_blank_lines(path))
        largest = max(largest, (lines, path))
        if lines > MAX_SOURCE_LINES:
            failures.append(f"FAIL: {path} has {lines} non-blank lines, more than "
                            f"{MAX_SOURCE_LINES}: split it by concern")
    return failures, largest


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def main(paths):
    problems, cases = self_test()
    for problem in problems:
        print("FAIL: " + problem)
    if problems:
        return 1
    print(f"Self-test: rule 3 caught every planted later-stage flag ({cases} cases, "
          f"among them #if HC_PLANTED in a stage 3 file)")
    stage_files, common_files = {}, {}
    common_archives, stage_archives = [], []
    stage_builds, shared_builds = {}, []
    for path in paths:
        if BUILD_FILE.search(path):
            build = STAGE_BUILD.search(path)
            if build:
                stage_builds.setdefault((int(build.group(3)), build.group(2)), []).append(read(path))
            else:
                shared_builds.append(read(path))
            continue
        if path.endswith(".a"):
            (common_archives if COMMON_FILE.search(path) else stage_archives).append(path)
            continue
        if not path.endswith(SOURCE_SUFFIXES):
            continue
        stage = STAGE_DIR.search(path)
        if stage:
            stage_files.setdefault((int(stage.group(3)), stage.group(2)), {})[stage.group(4)] = path
        elif COMMON_FILE.search(path):
            common_files[COMMON_FILE.search(path).group(2)] = path
    if len(stage_files) < 2 or not common_files:
        print("FAIL: expected the sources of common/ and of at least two stages")
        return 1
    if len(stage_builds) < 2:
        print("FAIL: expected the BUILD files of at least two stages: is tests/BUILD passing them?")
        return 1
    failures, rows = check_copies(stage_files)
    failures += check_common(common_files, common_archives, stage_archives)
    stage_sources = {key: {name: read(path) for name, path in files.items()}
                     for key, files in stage_files.items()}
    flag_failures, stage_flags = check_later_flags(stage_sources, stage_builds, shared_builds)
    failures += flag_failures
    size_failures, largest = check_file_sizes(
        [path for files in list(stage_files.values()) + [common_files]
         for path in files.values()])
    failures += size_failures
    print("Files a later stage holds under an earlier stage's name (shared non-blank lines):")
    print("\n".join(rows) if rows else "  none")
    for failure in failures:
        print(failure)
    if not failures:
        print(f"PASS: {len(stage_files)} stages, {sum(map(len, stage_files.values()))} files; "
              f"common/ ({len(common_files)} files) names nothing only a stage defines; "
              f"no stage tests a flag only a later stage's BUILD sets "
              f"(flags set first by a stage's BUILD: {', '.join(stage_flags) or 'none'}); "
              f"no allocator source over {MAX_SOURCE_LINES} non-blank lines "
              f"(the largest: {largest[1]}, {largest[0]})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
