#!/usr/bin/env python3
"""tests/layering_check.py FILE... — each stage holds its own layer.

The arguments are the sources of common/ and of every stage package, and
the static archives of every stage (bazel passes them: tests/BUILD). Two
rules (docs/design.md, "Layers and hooks"):

  1. No source file of a stage shares more than MAX_SHARE of its non-blank
     lines with the file of the same name in an earlier stage. A later
     stage changes an earlier layer through hooks that layer calls; a
     changed copy is right only where most of the file changes, and then
     the diff is the lesson (tools/stage_diff.sh).
  2. Nothing in common/ names what only a stage defines: common/ is shared
     by every stage unchanged, so it cannot know which stages exist. Its
     code (comments and strings aside: the trace names its events in
     words) may name the public API it declares, and nothing a stage's
     archive defines that common's does not.
"""

import difflib
import os
import re
import subprocess
import sys

MAX_SHARE = 0.40
SOURCE_SUFFIXES = (".c", ".h", ".cc")
STAGE_DIR = re.compile(r"(^|/)(stage([0-9]+)_[a-z_]+)/([^/]+)$")
COMMON_FILE = re.compile(r"(^|/)common/([^/]+)$")


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


def main(paths):
    stage_files, common_files = {}, {}
    common_archives, stage_archives = [], []
    for path in paths:
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
    failures, rows = check_copies(stage_files)
    failures += check_common(common_files, common_archives, stage_archives)
    print("Files a later stage holds under an earlier stage's name (shared non-blank lines):")
    print("\n".join(rows) if rows else "  none")
    for failure in failures:
        print(failure)
    if not failures:
        print(f"PASS: {len(stage_files)} stages, {sum(map(len, stage_files.values()))} files; "
              f"common/ ({len(common_files)} files) names nothing only a stage defines")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
