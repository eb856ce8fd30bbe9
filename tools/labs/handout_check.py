#!/usr/bin/env python3
"""tools/labs/handout_check.py — every name a lab handout uses exists in its workspace.

usage: tools/labs/handout_check.py WORKSPACE...     (a generated lab: tools/labs/make_lab.py)

Reads WORKSPACE/LAB.md. For each `inline code` span (fenced blocks are
commands and diagrams: tools/labs/lab_test.sh runs the commands), every code name
in it -- a word with an underscore, or one written as a call `name(` -- must
occur in the code of some file of the workspace (sources, BUILD files,
scripts, their comments left out: a name only a comment mentions is not one
a student can use; the handout itself does not count), and every
`tools/...` path must be a file there. Every docs/ page a workspace file
names must be there too. A name the student cannot have on purpose (the reference's, or the
C library's) is declared in the handout, once, in a comment:

    <!-- names not in the workspace: strtoul (the C library) -->

Exit status 1 and one line per missing name (LAB.md:LINE: ...), else 0.
A skeleton is the right workspace to check: a name that only the removed
bodies use is one the student cannot find. A solved lab (no skeleton stop
left: the student's own workspace) is told apart: what the check finds
there is printed as notes, exit status 0 (a design of one's own may do
without the reference's names).
"""

import os
import re
import sys

sys.dont_write_bytecode = True

TEXT_SUFFIXES = (".c", ".h", ".cc", ".bzl", ".sh", ".py", ".lds", ".txt", ".json")
DECLARED = re.compile(r"<!--\s*names not in the workspace:(.*?)-->", re.S)
SPAN = re.compile(r"`([^`]+)`")
# A word, not part of a flag (--test_filter), a path or a file name.
WORD = re.compile(r"(?<![\w./-])([A-Za-z_][A-Za-z0-9_]*)(?![\w.]*/)(\s*\()?")


C_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
HASH_COMMENT = re.compile(r"(?m)(^|\s)#(?!include|define|if|endif|else|undef|pragma|error)[^\n]*")
STOP = 'hc_fatal("lab: '


def code_of(name, text):
    """`text` without its comments: a name the handout uses must be one a
    student can call or read in code, not one a comment mentions."""
    if name.endswith((".c", ".h", ".cc", ".lds")):
        return C_COMMENT.sub(" ", text)
    if name.endswith((".py", ".sh", ".bzl")) or name in ("BUILD", "WORKSPACE", ".bazelrc"):
        return HASH_COMMENT.sub(" ", text)
    return text


# A piece's name, as a reference copy marks it (LAB BEGIN) and a skeleton
# stops on it (LAB name: yours to write; "lab: name in ... is not written"):
# the handout's table names pieces, and either copy must know them.
PIECE = re.compile(r"/\* LAB (?:BEGIN|END): ([A-Za-z0-9_]+) \*/|/\* LAB ([A-Za-z0-9_]+): yours to write")


def workspace_words(workspace):
    words = set()
    for path, text in workspace_files(workspace):
        words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", code_of(os.path.basename(path), text)))
        words.update(a or b for a, b in PIECE.findall(text))
        words.add(os.path.basename(path))
    return words


def is_skeleton(workspace):
    """Whether some piece is still the skeleton's stop (make_lab.py): a
    solved lab has none left."""
    return any(STOP in text for _, text in workspace_files(workspace))


def workspace_files(workspace):
    """(path, text) of the workspace's sources, BUILD files and scripts
    (not LAB.md, not the docs/ pages that came along)."""
    for dirpath, dirnames, files in os.walk(workspace):
        dirnames[:] = [d for d in dirnames if not d.startswith("bazel-") and d != "__pycache__"]
        for name in files:
            path = os.path.join(dirpath, name)
            if path == os.path.join(workspace, "LAB.md"):
                continue
            if not (name.endswith(TEXT_SUFFIXES) or name in ("BUILD", "WORKSPACE", ".bazelrc")):
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                yield path, f.read()


def check(workspace):
    with open(os.path.join(workspace, "LAB.md"), encoding="utf-8") as f:
        text = f.read()
    declared = set()
    for m in DECLARED.finditer(text):
        declared.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", re.sub(r"\([^)]*\)", "", m.group(1))))
    words = workspace_words(workspace)
    # Fenced blocks blanked (line numbers kept): a span may wrap a line.
    lines, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            lines.append("")
        else:
            lines.append("" if fenced else line)
    prose = "\n".join(lines)
    problems = []
    for m in SPAN.finditer(prose):
        span, number = " ".join(m.group(1).split()), prose.count("\n", 0, m.start()) + 1
        for path in re.findall(r"(?<![\w/])tools/[\w./-]*[\w-]", span):
            if not os.path.exists(os.path.join(workspace, path)) and path not in declared:
                problems.append(f"LAB.md:{number}: `{span}`: {path} is not in the workspace")
        for word, call in WORD.findall(span):
            if not ("_" in word.strip("_") or call) or word in declared:
                continue
            if word not in words:
                problems.append(f"LAB.md:{number}: `{span}`: {word} is in no file of the "
                                f"workspace (a name of the reference? declare it, or fix it)")
    problems += yardstick_rows(workspace, text)
    problems += docs_cited(workspace)
    return problems


DOCS_PAGE = re.compile(r"(?<![\w/])docs/[\w/-]+\.md")


def docs_cited(workspace):
    """Every docs/ page a workspace file names (a source's "see docs/...")
    is in the workspace: a student reading that comment can open it."""
    problems = []
    for path, text in workspace_files(workspace):
        for page in sorted(set(DOCS_PAGE.findall(text))):
            if not os.path.exists(os.path.join(workspace, page)):
                problems.append(f"{os.path.relpath(path, workspace)}: names {page}, which the "
                                f"workspace lacks (carry what it says, or point into the workspace)")
    return problems


def yardstick_rows(workspace, text):
    """The handout's yardstick table is the one tools/labs/yardsticks.json ships."""
    tools = os.path.join(workspace, "tools", "labs")
    stages = sorted(d for d in os.listdir(workspace) if re.match(r"^stage[0-9]+_", d))
    if not stages or not os.path.exists(os.path.join(tools, "grade.py")):
        return []
    sys.path.insert(0, tools)
    try:
        import grade
    finally:
        sys.path.pop(0)
    stage = max(stages, key=lambda d: int(re.match(r"^stage([0-9]+)_", d).group(1)))
    want = grade.yardstick_table(stage)
    if len(want) <= 2:
        return [f"tools/labs/yardsticks.json ships no yardsticks for {stage}"]
    have = set(text.splitlines())
    return [f"LAB.md: lacks the yardstick row `{row}` (tools/labs/grade.py --yardstick-table {stage})"
            for row in want if row not in have]


def main(argv):
    if not argv:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    bad = 0
    for workspace in argv:
        problems = check(workspace)
        if problems and not is_skeleton(workspace):
            # A solved lab: the student's code may do without a name of the
            # reference's, and the handout was checked on the skeleton.
            print(f"{workspace}: a solved lab (no piece left to write): the names below are not "
                  f"in its code; the handout is checked on a skeleton (tools/labs/lab_test.sh)")
            for problem in problems:
                print(f"  note: {workspace}/{problem}")
            continue
        for problem in problems:
            print(f"{workspace}/{problem}")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
