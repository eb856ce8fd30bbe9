#!/usr/bin/env python3
"""tools/docs/docs_check.py — what docs/ says is true of the tree: names, paths, figures.

usage: tools/docs/docs_check.py [--list] [--figures PROGRAM] [ROOT]
       (ROOT: a checkout, or //docs:docs_check_test's runfiles; PROGRAM:
       tools/docs/figures/docs_figures, built; without it the sizeof figures go unchecked)

Checks, and prints one line per problem (FILE:LINE: ...), exit status 1:
  names    every code name in an `inline code` span of docs/*.md, docs/labs/*.md
           and README.md (a word with an underscore, or written as a call
           `name(`) occurs in some source, BUILD file or script of the tree;
           the names of other projects, glibc and the kernel are listed in
           OUTSIDE_NAMES below, each group with what it names;
  paths    every path in a span or a fenced block (`stage3_pagecache/malloc.c`,
           `tools/measure/count_fastpath.sh 3`) is a file or folder of the tree, and
           every Bazel label (`//bench:dropin_count_test`) names a package of
           the tree and a target its BUILD file (or a macro it loads) defines;
  figures  each figure in FIGURES below, wherever the docs or the headers'
           comments quote it, equals the tree's value: the drop-in's
           instruction limits (bench/BUILD, //bench:dropin_count_test's
           arguments), the sized fast path's counts (tools/measure/count_fastpath.sh,
           its table of documented counts), page-map and size-class figures
           (tools/docs/figures/docs_figures, from sizeof and the #defines), a
           `NAME` = VALUE quote of an integer #define, a size named with its
           #define ("64 KiB (`HC_BATCH_BYTES`)"), an environment variable's
           default against options.h's HC_DEFAULT_ #define, and dropin.md's
           table of costs;
  links    every link to a heading (`stage3.md#8-what-hc_free-costs`) finds it,
           every "stage3.md, section 8" in a chapter or a comment names a
           numbered section of that chapter, and a chapter's numbered
           sections run in order, each once;
  trackers no doc, source, script or BUILD file names a tracker entry
           (the word "issue" and a number): it says what the thing is;
  hooks    docs/design.md's table of hook headers lists exactly the hooks
           each header declares (functions named with its hook prefix),
           docs/stage4.md's table of its files the hooks each file defines,
           and no comment or chapter counts them wrongly ("the three hooks").
Deterministic and quick: it reads files and runs one small program.
"""

import os
import re
import subprocess
import sys

sys.dont_write_bytecode = True

# ---- Names of things outside the tree ------------------------------------------------
# Code names the docs use that are not hcmalloc's: a reader looks them up in
# the project named. Keep each with its owner; a name of ours goes nowhere here.
OUTSIDE_NAMES = {
    # glibc and the C library
    "glibc": """__malloc_hook _int_malloc __libc_pvalloc __libc_valloc __posix_memalign
        malloc_get_state malloc_set_state malloc_info __nptl_deallocate_tsd RTLD_NEXT
        __libc_start_call_main __lll_lock_wake __lll_lock_wait""",
    # the Linux kernel's interfaces
    "Linux": """MADV_FREE MADV_WILLNEED mremap MREMAP_MAYMOVE PT_GNU_EH_FRAME rseq_cs RSEQ_SIG futex_wait
        sys_enter_futex pvm_irq_enable""",
    # C++'s library
    "C++": "unordered_map",
    # tcmalloc and gperftools
    "tcmalloc": "TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES TCMALLOC_HEAP_LIMIT_MB",
    # jemalloc's and mimalloc's internals, valgrind's tools
    "jemalloc, mimalloc, valgrind": "dirty_decay_ms muzzy_decay_ms thread_free callgrind_annotate",
    # mimalloc-bench's programs
    "mimalloc-bench": "zero_on_malloc_large",
    # names the docs give on purpose to what hcmalloc does not have, and to
    # pseudocode
    "not hcmalloc's, on purpose": "HCMALLOC_PROFILE_INTERVAL_MS sample_point address_of_link",
}

# Files the docs name that are not the tree's: mimalloc-bench's, jemalloc's
# wrapper, and the small programs the docs print in full for a reader to compile.
OUTSIDE_FILES = {"benchmark.h", "pyalloc.py", "CMakeLists.txt", "t.c", "prop.c", "strgrow.c",
                 "jemalloc.sh"}

# Paths the docs name that the tree produces or that live outside it.
GENERATED_PATHS = ("bench-results/", "bazel-bin/", "bazel-out/", "bazel-testlogs/", "lab/",
                   "lab1/", "lab2/", "lab3/", "lab4/", "grade_traces/", "grade.json",
                   "/proc/", "/sys/", "/usr/", "/etc/", "/tmp/", "/dev/", "/lib/", "~/")

# Files the bench and the tools write into bench-results/ or a lab, named alone.
GENERATED_NAMES = {"chart.svg", "results.md", "results.csv", "churn.csv", "machine.txt",
                   "callgrind.csv", "trace.svg", "LAB.md", "latency.csv"}

DOC_FILES_ROOT = ["README.md"]
SOURCE_SUFFIXES = (".c", ".h", ".cc", ".bzl", ".sh", ".py", ".lds", ".txt", ".json", ".map",
                   ".supp", ".bazelrc")
SPAN = re.compile(r"`([^`\n]+(?:\n[^`\n]+)?)`")
WORD = re.compile(r"(?<![\w./$-])([A-Za-z_][A-Za-z0-9_]*)(?![\w.]*/)(\s*\()?")
PATH = re.compile(r"(?<![\w./$-])((?:\.\./)?(?:[\w.-]+/)+[\w.*-]*|[\w-]+\.(?:c|h|cc|md|py|sh|bzl|svg))(?![\w/])")
LABEL = re.compile(r"(?<![\w@:])//([\w/.-]*)(?::([\w.+-]+))?")
# ... other checks are added below ...


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def tree_files(root):
    """Every file of the tree, as a path relative to ROOT."""
    out = []
    for dirpath, dirnames, files in os.walk(root, followlinks=True):
        dirnames[:] = [d for d in dirnames if not (d.startswith("bazel-") or d.startswith(".")
                                                    or d in ("__pycache__", "_solib_k8")
                                                    or d.endswith(".runfiles"))]
        for name in files:
            out.append(os.path.relpath(os.path.join(dirpath, name), root))
    return out


def doc_files(files):
    return sorted(f for f in files if (f.startswith("docs/") and f.endswith(".md"))
                  or f in DOC_FILES_ROOT)


def source_words(root, files):
    words = set()
    for f in files:
        name = os.path.basename(f)
        if f.endswith(".md") or f.endswith(".svg") or f == "tools/docs/docs_check.py":
            continue  # docs and this file's own lists do not make a name real
        if not (name.endswith(SOURCE_SUFFIXES) or name in ("BUILD", "WORKSPACE")):
            continue
        words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", read(os.path.join(root, f))))
    return words


def blank_fences(text):
    """(prose with fenced blocks blanked, fenced blocks with prose blanked): lines kept."""
    prose, fenced_lines, fenced = [], [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            prose.append("")
            fenced_lines.append("")
        elif fenced:
            prose.append("")
            fenced_lines.append(line)
        else:
            prose.append(line)
            fenced_lines.append("")
    return "\n".join(prose), "\n".join(fenced_lines)


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


# ---- names and paths -----------------------------------------------------------------

def outside_names():
    names = set()
    for group in OUTSIDE_NAMES.values():
        names.update(group.split())
    return names


def path_exists(root, files, dirs, packages, bzl_text, doc, path):
    path = path.rstrip(".,:;")
    if any(c in path for c in "*<>{}$") or path.startswith(GENERATED_PATHS + ("../",)):
        return True
    path = path.rstrip("/")
    if path in dirs or path in files:
        return True
    if path in GENERATED_NAMES or re.sub(r"-W\b|-W-", "-", path) != path:
        return True  # a file the bench writes (W: a workload's name)
    if os.path.basename(path) in OUTSIDE_FILES:
        return True
    if os.path.dirname(path) in packages and target_defined(packages, bzl_text, os.path.dirname(path),
                                                            os.path.basename(path)):
        return True  # a target's output, named by its package path (tools/docs/figures/handoff)
    if "/" not in path:  # a file named alone: some file of the tree has that name
        return any(os.path.basename(f) == path for f in files)
    for base in ("", os.path.dirname(doc)):
        candidate = os.path.normpath(os.path.join(base, path))
        if candidate in files or candidate in dirs:
            return True
    return False


def label_problem(root, packages, bzl_text, label_pkg, target):
    if re.search(r"[A-Z]", label_pkg):
        return None  # a pattern (//stageN_x), not a package
    if label_pkg.endswith("...") or label_pkg == "":
        pkg = label_pkg.rstrip("./")
        if pkg and not any(p == pkg or p.startswith(pkg + "/") for p in packages):
            return f"//{label_pkg}: no package {pkg}"
        return None
    if label_pkg not in packages:
        return f"//{label_pkg}: no such package (no {label_pkg}/BUILD; a new one? docs/BUILD's DOCS_CHECK_TREE)"
    if target is None or target == "all" or target == "*":
        return None
    if os.path.exists(os.path.join(root, label_pkg, target)):  # a source file of the package
        return None
    if target_defined(packages, bzl_text, label_pkg, target):
        return None
    return f"//{label_pkg}:{target}: {label_pkg}/BUILD defines no such target"


def target_defined(packages, bzl_text, label_pkg, target):
    build = packages[label_pkg]
    # A target is defined by name, or by a macro or a comprehension that
    # builds its name from pieces ("lib%s.so" % lib, name + "_tsan"): the
    # name is at most three string literals of the BUILD file or a .bzl file
    # put together.
    literals = set(re.findall(r'"([\w.+-]*)(?:%s)?([\w.+-]*)"', build + bzl_text))
    pieces = {x for pair in literals for x in pair if x}

    def composed(rest, depth):
        if rest in pieces:
            return True
        return depth > 1 and any(rest.startswith(p) and composed(rest[len(p):], depth - 1)
                                 for p in pieces if p != rest)
    return composed(target, 3) or any(re.fullmatch(p, target) for p in name_patterns(build + bzl_text))


def name_patterns(text):
    """Names a BUILD file builds with %: "property_%s_test" -> property_\\w+_test."""
    return [re.escape(a) + r"\w+" + re.escape(b) for a, b in re.findall(r'"([\w.+-]*)%s([\w.+-]*)"', text)]


def check_names_and_paths(root, files):
    problems = []
    dirs = set()
    for f in files:
        d = os.path.dirname(f)
        while d:
            dirs.add(d)
            d = os.path.dirname(d)
    top = {f.split("/")[0] for f in files if "/" in f}
    packages = {os.path.dirname(f): read(os.path.join(root, f)) for f in files
                if os.path.basename(f) == "BUILD"}
    bzl_text = "".join(read(os.path.join(root, f)) for f in files if f.endswith(".bzl"))
    words = source_words(root, files) | outside_names()
    patterns = name_patterns("".join(packages.values()) + bzl_text)
    for doc in doc_files(files):
        text = read(os.path.join(root, doc))
        prose, fences = blank_fences(text)
        spans = [(m.group(1), m.start()) for m in SPAN.finditer(prose)]
        # Each item says where it came from: a fenced line's offset (in the
        # fences) can equal a span's (in the prose) by chance.
        for span, pos, is_fence in ([(span, pos, False) for span, pos in spans] +
                                    [(line, i, True) for line, i in fence_lines(fences)]):
            where = f"{doc}:{line_of(fences if is_fence else prose, pos)}"
            for m in LABEL.finditer(span):
                problem = label_problem(root, packages, bzl_text, m.group(1), m.group(2))
                if problem:
                    problems.append(f"{where}: {problem}")
            for m in PATH.finditer(LABEL.sub(" ", re.sub(r"https?://\S+", " ", span))):
                path = m.group(1)
                first = path.split("/")[0]
                if "/" in path and first not in top and first != "..":
                    continue  # not a path of the tree (an install path, a URL's)
                if "/" not in path and is_fence:
                    continue
                if not path_exists(root, files, dirs, packages, bzl_text, doc, path) and not (
                        is_fence and any(f.startswith(path) for f in files)):
                    problems.append(f"{where}: `{path}` is not a file or folder of the tree "
                                    f"(a new package? add its files to docs/BUILD's DOCS_CHECK_TREE)")
            if is_fence:
                continue
            for word, call in WORD.findall(LABEL.sub(" ", span)):
                if not ("_" in word.strip("_") or call) or word in words:
                    continue
                if any(re.fullmatch(p, word) for p in patterns):
                    continue  # a target a BUILD file names with % (property_stage1_test)
                if span.lstrip().startswith(("-", "$")) or re.match(r"^[A-Z][A-Z0-9_]*=", span):
                    continue  # a flag or an environment setting
                problems.append(f"{where}: `{span}`: {word} is in no source, BUILD file or "
                                f"script (renamed? or an outside name: tools/docs/docs_check.py's "
                                f"OUTSIDE_NAMES)")
    return problems


def fence_lines(fences):
    pos = 0
    for line in fences.split("\n"):
        if line.strip():
            yield line, pos
        pos += len(line) + 1


# ---- tracker numbers -------------------------------------------------------------------
# The product names what a thing is, not the tracker entry that asked for it.
TRACKER = re.compile(r"\b[Ii]ssues? #?\d+|\bthe issue's\b")


def check_tracker_numbers(root, files):
    problems = []
    for f in files:
        name = os.path.basename(f)
        if f == "tools/docs/docs_check.py" or not (name.endswith(SOURCE_SUFFIXES + (".md",)) or name == "BUILD"):
            continue
        text = read(os.path.join(root, f))
        for m in TRACKER.finditer(text):
            problems.append(f"{f}:{line_of(text, m.start())}: \"{m.group(0)}\": say what the thing is, "
                            f"not which tracker entry asked for it")
    return problems


# ---- links -----------------------------------------------------------------------------
LINK = re.compile(r"\]\(([\w./-]*\.md)?#([^)\s]+)\)")


def slugs(text):
    """The anchors a Markdown renderer gives TEXT's headings (GitHub's rule)."""
    out, seen = set(), {}
    _, fences = blank_fences(text)
    prose, _ = blank_fences(text)
    for line in prose.split("\n"):
        m = re.match(r"#+ (.*)", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


SECTION_REF = re.compile(r"\b(?:docs/)?(\w+)\.md(?:\]\([^)]*\))?,? (?:section|§) (\d+)\b")


def check_section_numbers(doc, text):
    """A doc's numbered sections ("## 7.") run one after another, each once,
    so that "section 7" names one place (a section pasted twice, or one
    skipped, breaks the references to every later one)."""
    prose, _ = blank_fences(text)
    numbers = [(int(m.group(1)), line_of(prose, m.start())) for m in re.finditer(r"^## (\d+)\.", prose, re.M)]
    return [f"{doc}:{line}: section {n} follows section {prev}"
            for (prev, _), (n, line) in zip(numbers, numbers[1:]) if n != prev + 1]


def check_links(root, files):
    """Every link to a heading (file.md#anchor, #anchor) finds the heading,
    and every "stage3.md, section 8" names a numbered section of that file."""
    problems = []
    for doc in doc_files(files):
        problems += check_section_numbers(doc, read(os.path.join(root, doc)))
    for doc in doc_files(files) + [f for f in files if f.endswith((".c", ".h", ".py", ".sh"))
                                   and f != "tools/docs/docs_check.py"]:
        text = read(os.path.join(root, doc))
        for m in SECTION_REF.finditer(re.sub(r"\s*\n\s*(?:\* ?|# ?|// ?)?", " ", text)):
            target = f"docs/{m.group(1)}.md"
            if target not in files:
                continue
            if not re.search(r"^## " + m.group(2) + r"\.", read(os.path.join(root, target)), re.M):
                problems.append(f"{doc}: \"{m.group(0)}\": {target} has no section {m.group(2)}")
        if not doc.endswith(".md"):
            continue
        prose, _ = blank_fences(text)
        for m in LINK.finditer(prose):
            target = os.path.normpath(os.path.join(os.path.dirname(doc), m.group(1))) if m.group(1) else doc
            if target not in files:
                problems.append(f"{doc}:{line_of(prose, m.start())}: links to {m.group(1)}, not a file of the tree")
            elif m.group(2) not in slugs(read(os.path.join(root, target))):
                problems.append(f"{doc}:{line_of(prose, m.start())}: {target} has no heading #{m.group(2)}")
    return problems


# ---- figures --------------------------------------------------------------------------
# Where prose quotes a figure the tree determines. Each rule: a pattern whose
# group 1 is the figure, and the key of the tree's value (tree_figures), or
# a tuple of keys for groups 1, 2, ... A
# figure quoted in another phrasing is not checked: quote it as below, or
# better, refer to the place that states it. A section that keeps figures of
# earlier trees on purpose starts with the line HISTORY_MARK; the check
# skips it up to the next heading of its level or above.
HISTORY_MARK = "<!-- figures of earlier trees: not checked against this one -->"
N = r"(\d+(?:\.\d+)?)"
FIGURE_RULES = [
    # page map (stage3_pagecache/page_map.h's pm_leaf)
    (N + r" (?:MiB|Mi) (?:of mapping |mapped )?(?:per|each) leaf", "pm_leaf_mib"),
    (r"leaf \(" + N + r" MiB", "pm_leaf_mib"),
    (r"(?:leaf|and) maps " + N + r" MiB", "pm_leaf_mib"),
    (N + r" MiB per GiB of address space", "pm_leaf_mib"),
    (N + r" (?:B|bytes) per (?:8 KiB )?page(?: of heap)?(?= \(|,|:| of| resident| in the page map|$)", "pm_bytes_per_page"),
    (r"(?:2\^34|page id) × " + N + r" B", "pm_bytes_per_page"),
    (r"one (?:4 KiB )?page of classes per " + N + r" MiB", "pm_heap_mib_per_class_page"),
    (r"one of classes per " + N + r" MiB", "pm_heap_mib_per_class_page"),
    (r"one (?:4 KiB )?page of (?:span )?pointers per " + N + r" MiB", "pm_heap_mib_per_span_page"),
    (r"about 1/" + N + r" of the heap", "pm_resident_fraction"),
    (r"two static roots of " + N + r" MiB", "pm_root_mib"),
    (r"class_offsets` of " + N + r" bytes", "pm_class_entry_bytes"),
    # size classes (common/size_class.h)
    (r"the smallest (?:size )?class (?:is|serves) " + N + r" bytes", "smallest_class_bytes"),
    (r"smallest class that serves a request is " + N, "smallest_class_bytes"),
    (r"`common/size_class\.h`: " + N + r" classes", "size_classes"),
    (N + r" classes \(click to open\)", "size_classes"),
    # dropin.md's table of what each library costs: sized, then the drop-in pair
    (r"\| `libhcmalloc\.so` / `\.a` \| " + N + r" \(stages 1 and 2: " + N + r"\) \| " + N + r" \|",
     ("sized_stage4", "sized_stage1", "dropin_default")),
    # the sized fast path (tools/measure/count_fastpath.sh's table)
    (r"hits: exactly " + N + r" instructions each", "sized_stage1"),
    (r"your cost per pair\. The reference's is " + N, "sized_stage1"),
    (r"stage4_reclaim_profiler 32` counts the twin: " + N, "sized_profiler"),
    (r"\| `libhcmalloc_profiler\.so` \| " + N + r" \(`hc_malloc`", "sized_profiler"),
]
# The fast path's instruction counts: a figure "N instructions a/per ... pair",
# classified by the words just before it (the pair it names).
PAIR_FIGURE = re.compile(r"\b(\d+) (?:callgrind )?instructions (?:a|per|for each|for a|of a) [^.;]{0,60}?\bpair")
PAST = re.compile(r"\b(?:from|was|were|took|before|earlier|then|used to|had)\b[^.]{0,25}$")


def pair_key(text, stage_text=""):
    """Which counted pair TEXT names (None: not one the tree asserts); the
    stage, for the stages' own pairs, from TEXT or STAGE_TEXT."""
    if "hardened" in text:
        return "dropin_hardened"
    if "profiler" in text or "sampling" in text:
        return "dropin_profiler"
    unsized = re.search(r"`hc_free`|hc_free\(p\)", text)
    if unsized or "hc_free_sized" in text or "sized" in text or "hc_malloc" in text:
        stage = re.search(r"stage[ _]?([1-4])", text) or re.search(r"stage[ _]?([1-4])", stage_text)
        if unsized and not "hc_free_sized" in text:
            return "unsized_stage" + (stage.group(1) if stage else "3")
        return "sized_stage" + (stage.group(1) if stage else "1")
    if "drop-in" in text or "`free`" in text or "libhcmalloc" in text:
        return "dropin_default"
    return None


def classify_pair(before, phrase, after, beyond_size):
    """The pair a figure counts: a build named just before it ("the hardened
    build: 51 instructions ..."), else the pair its own words name, else
    what follows it up to the next comma. A pair of a request above the
    list table ("malloc(8192)", "hc_malloc(8192)": beyond_size) is counted
    apart."""
    if "hardened" in before or "profiler" in before:
        key = pair_key(before)
    else:
        key = pair_key(phrase, before) or pair_key(before + after)
    if key is not None and f"({beyond_size})" in phrase + after:
        key += "_beyond_table"
    return key


def dropin_count_args(root):
    """//bench:dropin_count_test's arguments: [(request size, library, limit)]."""
    build = read(os.path.join(root, "bench", "BUILD"))
    test = build[build.index('name = "dropin_count_test"'):]
    args = test[test.index("args = ["):]
    args = args[:args.index("]")]
    out, size = [], "32"
    for m in re.finditer(r'"size=(\d+)"|:preload_(hcmalloc\w*)\)",\s*"(\d+)"', args):
        if m.group(1):
            size = m.group(1)
        else:
            out.append((size, m.group(2), m.group(3)))
    return out


def beyond_table_size(root):
    """The request size the count test counts above the list table: its largest."""
    return max(int(size) for size, _, _ in dropin_count_args(root))


def dropin_limits(root):
    """//bench:dropin_count_test's limits: the number after each preload
    library, for malloc(32) pairs and, keyed "_beyond_table", for the
    largest size it counts, one above the list table. The sizes between
    (the table's top) are held to the malloc(32) limits and quote none."""
    keys = {"hcmalloc": "dropin_default", "hcmalloc_hardened": "dropin_hardened",
            "hcmalloc_profiler": "dropin_profiler"}
    beyond = str(beyond_table_size(root))
    out = {}
    for size, lib, limit in dropin_count_args(root):
        if size == "32":
            out[keys[lib]] = limit
        elif size == beyond:
            out[keys[lib] + "_beyond_table"] = limit
    return out


def sized_counts(root):
    """tools/measure/count_fastpath.sh's table of the documented sized counts, per stage."""
    script = read(os.path.join(root, "tools", "measure", "count_fastpath.sh"))
    table = script[script.index("documented_count() {"):]
    table = table[:table.index("\n}")]
    out = {}
    for cases, count in re.findall(r"\n\s*([\w|/]+)\) echo (\d+)", table):
        for case in cases.split("|"):
            stage, mode, size = case.split("/")
            suffix = "" if size == "32" else "_beyond_table"
            if stage.endswith("_profiler"):
                out[mode + "_profiler" + suffix] = count
                continue
            out[mode + "_stage" + stage[len("stage")] + suffix] = count
    return out


def tree_figures(root, figures_program):
    figures = {}
    if figures_program:
        out = subprocess.run([figures_program], check=True, capture_output=True, text=True).stdout
        figures.update(line.split(" ", 1) for line in out.splitlines())
    figures.update(dropin_limits(root))
    figures.update(sized_counts(root))
    return figures


def checked_text(text):
    """The text with history sections blanked (line numbers kept)."""
    out, skip_level = [], None
    for line in text.split("\n"):
        heading = re.match(r"(#+) ", line)
        if heading and skip_level is not None and len(heading.group(1)) <= skip_level:
            skip_level = None
        if line.strip() == HISTORY_MARK:
            skip_level = 6
            for prev in reversed(out):
                m = re.match(r"(#+) ", prev)
                if m:
                    skip_level = len(m.group(1))
                    break
        out.append("" if skip_level is not None else line)
    return "\n".join(out)


def define_values(root, files):
    """Integer #defines of the tree: NAME -> value (the expression evaluated)."""
    values = {}
    for f in files:
        if not f.endswith((".h", ".c")):
            continue
        for name, expr in re.findall(r"^#define ([A-Z][A-Z0-9_]+) +([^\n/]+)", read(os.path.join(root, f)), re.M):
            expr = re.sub(r"\((?:size_t|uintptr_t|uint32_t|unsigned)\)", "", expr).rstrip("uUlL \t")
            if re.fullmatch(r"[\d\s()*+<-]+", expr):
                try:
                    values[name] = eval(expr, {"__builtins__": {}})
                except SyntaxError:
                    pass
    return values


def number(text):
    return text.replace(",", "")


def same(quoted, value):
    try:
        return float(number(quoted)) == float(value)
    except ValueError:
        return False


def check_figures(root, files, figures_program):
    figures = tree_figures(root, figures_program)
    defines = define_values(root, files)
    beyond = beyond_table_size(root)
    problems = []
    places = [f for f in doc_files(files)] + [f for f in files if f.endswith((".h", ".c")) and
                                                f.startswith(("common/", "stage"))]
    for doc in places:
        text = checked_text(read(os.path.join(root, doc)))
        flat = re.sub(r"\s*\n\s*(?:\* ?|//\s*)?", " ", text) if doc.endswith(".h") else None

        def report(pos, quoted, key, value, source_text=text):
            if LIST_CHECKED and same(quoted, value):
                print(f"{doc}:{line_of(source_text, pos)}: {quoted} = {key}", file=sys.stderr)
                return
            problems.append(f"{doc}:{line_of(source_text, pos)}: quotes {quoted} where the tree "
                            f"says {value} ({key}: tools/docs/docs_check.py)")
        # Rules match across line breaks: a figure's words may wrap.
        joined, index = join_lines(text)
        for pattern, keys in FIGURE_RULES:
            for m in re.finditer(pattern, joined):
                for group, key in enumerate(keys if isinstance(keys, tuple) else (keys,), 1):
                    if key in figures and (LIST_CHECKED or not same(m.group(group), figures[key])):
                        report(index[m.start(group)], m.group(group), key, figures[key])
        for m in PAIR_FIGURE.finditer(joined):
            before = joined[max(0, m.start() - 40):m.start()]
            if PAST.search(before[-30:]):
                continue
            # The words just before, the pair's own, then what follows up to
            # the next comma: "the hardened build: 51 instructions per ... pair".
            after = re.split(r"[,;(.]", joined[m.end():m.end() + 60])[0]
            key = classify_pair(before, m.group(0), after, beyond)
            if key in figures and (LIST_CHECKED or not same(m.group(1), figures[key])):
                report(index[m.start(1)], m.group(1), key, figures[key])
        # count_fastpath.sh's output and its commands' comments, in the chapter
        # of the stage they count (docs/stageN.md) or naming it.
        chapter = re.fullmatch(r"docs/stage(\d)\.md", doc)
        for m in re.finditer(r"(?:count_fastpath\.sh stage(\d)\w*( 32(?: hc_free\b)?)? +# [^=\n]*= |"
                             r"hc_malloc hc_free(?:_sized)?: |"
                             r"hc_free_sized` loop the same way: \d+ \+ \d+ = )(\d+) per pair", joined):
            stage = m.group(1) or (chapter.group(1) if chapter else None)
            mode = "unsized" if re.search(r"hc_free(?!_sized)\b", m.group(0)) else "sized"
            key = mode + "_stage" + stage if stage else None
            if key in figures and (LIST_CHECKED or not same(m.group(3), figures[key])):
                report(index[m.start(3)], m.group(3), key, figures[key])
        for m in re.finditer(r"`([A-Z][A-Z0-9_]+)` (?:=|is|of) ([\d,]+)\b(?! ?[×x*%])", joined):
            name, quoted = m.group(1), m.group(2)
            if name in defines and (LIST_CHECKED or not same(quoted, defines[name])):
                report(index[m.start(2)], quoted, "#define " + name, defines[name])
        # "64 KiB (`HC_BATCH_BYTES`)", "once per 2 MiB allocated (`NAME`": a size
        # followed by the #define it comes from.
        units = {"B": 1, "bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
        for m in re.finditer(r"\b(\d+(?:\.\d+)?) (B|bytes|KiB|MiB|GiB)\b[^`\d.;]{0,40}\(`([A-Z][A-Z0-9_]+)`", joined):
            name = m.group(3)
            if name not in defines:
                continue
            value = 1 << defines[name] if name.endswith("_SHIFT") else defines[name]
            where = f"{doc}:{line_of(text, index[m.start(1)])}"
            if float(m.group(1)) * units[m.group(2)] != value:
                problems.append(f"{where}: quotes {m.group(1)} {m.group(2)} where the tree says "
                                f"{value} bytes (#define {name}: tools/docs/docs_check.py)")
            elif LIST_CHECKED:
                print(f"{where}: {m.group(1)} {m.group(2)} = #define {name}", file=sys.stderr)
        # An environment variable's default, in prose ("`HCMALLOC_X`, default
        # 32 MiB") or in stage4.md's table ("| `HCMALLOC_X` | 32m |"), against
        # options.h's HC_DEFAULT_X.
        for m in re.finditer(r"`HCMALLOC_([A-Z_]+)`(?:,? \(?(?:by )?default:? | \| )(\d+(?:\.\d+)?)"
                             r"(?: ?(KiB|MiB|GiB|k|m|g|ms|s)\b|(?![\d,.]))", joined):
            name = "HC_DEFAULT_" + m.group(1)
            if name not in defines:
                continue
            scale = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "k": 1 << 10, "m": 1 << 20,
                     "g": 1 << 30, "ms": 1, "s": 1000 if name.endswith("_MS") else 1, None: 1}[m.group(3)]
            where = f"{doc}:{line_of(text, index[m.start(2)])}"
            if float(m.group(2)) * scale != defines[name]:
                problems.append(f"{where}: quotes {m.group(2)}{m.group(3) or ''} as HCMALLOC_{m.group(1)}'s "
                                f"default where the tree says {defines[name]} (#define {name})")
            elif LIST_CHECKED:
                print(f"{where}: {m.group(2)} {m.group(3) or ''} = #define {name}", file=sys.stderr)
        for m in re.finditer(r"`tools/labs/stage_diff\.sh (\d) (\d)` prints (?:exactly )?(?:that, )?([\d,]+) lines", joined):
            lines = stage_diff_lines(root, m.group(1), m.group(2))
            if LIST_CHECKED or str(lines) != number(m.group(3)):
                report(index[m.start(3)], m.group(3), "tools/labs/stage_diff.sh " + m.group(1) + " " + m.group(2), lines)
    return problems


def join_lines(text):
    """The text with each line break and its indentation or comment leader made
    one space, and for each character of the result its place in TEXT."""
    out, index, i = [], [], 0
    for m in re.finditer(r"\s*\n\s*(?:\*(?!/) ?|//\s*|> ?)?\s*|.", text, re.S):
        piece = m.group(0)
        out.append(" " if "\n" in piece else piece)
        index.append(m.start())
    return "".join(out), index


def stage_diff_lines(root, old, new):
    out = subprocess.run(["bash", os.path.join(root, "tools", "labs", "stage_diff.sh"), old, new],
                         check=True, capture_output=True, text=True).stdout
    return out.count("\n")


# ---- hooks ------------------------------------------------------------------------------
# A hook header's hooks are the functions it declares with its prefix.
HOOK_PREFIXES = {
    "stage2_centralcache/thread_cache_hooks.h": "tc_layer_",
    "stage3_pagecache/page_policy.h": "pc_policy_",
    "stage3_pagecache/layer_hooks.h": "hc_layer_",
}
COUNT_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
               "eight": 8, "nine": 9, "ten": 10}


def declared_hooks(root, header, prefix):
    text = read(os.path.join(root, header))
    return set(re.findall(r"^[\w ]+?\**\s*\b(" + prefix + r"\w+)\(", text, re.M))


def stage4_table_problems(root):
    """docs/stage4.md's table of the stage's files: each file's row lists the
    hooks it defines, no more, no fewer."""
    problems = []
    chapter = read(os.path.join(root, "docs", "stage4.md"))
    prefixes = "|".join(HOOK_PREFIXES.values())
    for number_, line in enumerate(chapter.split("\n"), 1):
        m = re.match(r"\| `(\w+\.c)` \| ([^|]*) \|", line)
        if not m or not os.path.exists(os.path.join(root, "stage4_reclaim", m.group(1))):
            continue
        source = read(os.path.join(root, "stage4_reclaim", m.group(1)))
        defined = set(re.findall(r"^[a-z][\w *]*?\b((?:" + prefixes + r")\w*)\([^;]*?\)\s*\{", source, re.M))
        listed = set(re.findall(r"`((?:" + prefixes + r")\w*)`", m.group(2)))
        for name in sorted(defined - listed):
            problems.append(f"docs/stage4.md:{number_}: `{m.group(1)}` defines {name}, its row omits it")
        for name in sorted(listed - defined):
            problems.append(f"docs/stage4.md:{number_}: its row lists {name}, `{m.group(1)}` does not define it")
    return problems


def check_hooks(root, files):
    problems = []
    sources = [f for f in files if f.endswith((".c", ".h", ".cc", ".md"))]
    problems += stage4_table_problems(root)
    design = read(os.path.join(root, "docs", "design.md"))
    rows = {}
    for number_, line in enumerate(design.split("\n"), 1):
        m = re.match(r"\| `([\w/]+\.h)` \|[^|]*\| ([^|]*) \|", line)
        if m and m.group(1) in HOOK_PREFIXES:
            rows[m.group(1)] = (number_, set(re.findall(r"`(\w+)`", m.group(2))))
    for header, prefix in HOOK_PREFIXES.items():
        hooks = declared_hooks(root, header, prefix)
        if header not in rows:
            problems.append(f"docs/design.md: the table of hook headers has no row for `{header}`")
            continue
        number_, listed = rows[header]
        for name in sorted(hooks - listed):
            problems.append(f"docs/design.md:{number_}: `{header}` declares {name}, the table omits it")
        for name in sorted(listed - hooks):
            problems.append(f"docs/design.md:{number_}: the table lists {name}, `{header}` declares no such hook")
        joined, index = join_lines(read(os.path.join(root, header)))
        for m in re.finditer(r"\bthe (\w+) (?:hooks|places)\b", joined):
            count = COUNT_WORDS.get(m.group(1).lower())
            if count is not None and count != len(hooks):
                problems.append(f"{header}: its comment says \"{m.group(0)}\" over {len(hooks)} hooks")
        # Elsewhere: "the two hooks of layer_hooks.h".
        name = os.path.basename(header)
        for f in sources:
            joined, index = join_lines(read(os.path.join(root, f)))
            for m in re.finditer(r"\b(?:the )?(\w+) hooks (?:of|in) `?(?:\w+/)?" + re.escape(name), joined):
                count = COUNT_WORDS.get(m.group(1).lower())
                if count is not None and count != len(hooks):
                    text = read(os.path.join(root, f))
                    problems.append(f"{f}:{line_of(text, index[m.start()])}: \"{m.group(0)}\" over "
                                    f"{len(hooks)} hooks")
    return problems


LIST_CHECKED = False


def main():
    global LIST_CHECKED
    args = sys.argv[1:]
    if args[:1] == ["--list"]:  # also print, to stderr, every figure found and checked
        LIST_CHECKED, args = True, args[1:]
    figures_program = None
    if args[:1] == ["--figures"]:
        figures_program, args = os.path.abspath(args[1]), args[2:]
    root = os.path.abspath(args[0] if args else os.path.join(os.path.dirname(__file__), "..", ".."))
    files = tree_files(root)
    problems = check_names_and_paths(root, files) + check_figures(root, files, figures_program)
    problems += check_hooks(root, files) + check_links(root, files) + check_tracker_numbers(root, files)
    for p in problems:
        print(p)
    print(f"docs_check: {len(problems)} problem(s) in {len(doc_files(files))} docs", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
