"""bench/bench.py — `bazel run //bench`: every stage against glibc and the peers.

Runs the driver's workloads (bench/workloads.c: `bench_driver list`) for
every allocator it finds. The headline rows run the same calls, malloc/free,
for every allocator: glibc's malloc, hcmalloc's drop-in (stage4_dropin,
stage 4's libhcmalloc.so) and tcmalloc, jemalloc and mimalloc when their
Debian libraries are present (the plain driver with LD_PRELOAD, as the
allocator articles compare them). Then each stage's own rows (its own build
of the driver, listed in bench/stages.bzl), labelled "sized API, linked
in": hc_malloc/hc_free_sized called directly, which is less work than
free() and shows what each layer buys.

With no options it runs the tour (TOUR_WORKLOADS at 1 thread and the
machine's cores, 3 reps: a few minutes); --full, or naming --workloads,
runs the whole matrix (1, 2, 4, 8 threads, 5 reps).
Every measurement is a fresh child process. Within a repetition all
allocators run one after another (interleaved), and the order rotates from one
repetition to the next, so a burst of load on this shared machine falls on a
different allocator each time; the median of the repetitions is reported.
A run that fails (a crash, a timeout) is reported with its reason in the
tables, results.csv and the chart; it fails the bench (exit status 1) only
when it is hcmalloc's (a stage or the drop-in) or glibc's (the plain driver,
which is the bench itself), not a peer's.

Writes a table per workload to stdout (report.py), a progress line per run
with the time left to stderr, and results.csv, chart.svg (chart.py; also
churn.csv, results.md, machine.txt, command.txt) into bench-results/ at the workspace
root, or --out. `--callgrind` counts instructions instead (exact,
repeatable) and writes callgrind.csv; `--latency` times every malloc of
bench/latency.c and writes latency.csv. `--heapmap WORKLOAD` runs one
workload once under stage 4's traced drop-in and writes its heap maps and
tier-traffic picture (docs/stage3.md).
"""

import argparse
import math
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import chart
import report
from report import fmt_int, fmt_ns

# ---- What the bench knows ---------------------------------------------------------

# The workloads are the driver's (bench/workloads.c, `bench_driver list`):
# load_workloads() fills this with name -> (what a run does, the allocator
# articles it models: 000-004 are [A0]-[A4] of docs/README.md's Sources).
WORKLOADS = {}

# The tour, what `bazel run //bench` runs with no options: the six workloads
# that tell the story of the layers (docs/benchmarks.md, section 4: the fast
# path; objects that live a while; sizes as programs use them; memory handed
# between threads; large blocks through the page cache; threads that come
# and go, with the memory each leaves behind), at 1 thread and as many as
# the machine has cores (at most TOUR_MAX_THREADS), median of TOUR_REPS:
# 324 runs on a 2-core machine, timed in docs/benchmarks.md. --full runs
# every workload at DEFAULT_THREADS, DEFAULT_REPS.
TOUR_WORKLOADS = ["tight", "hold", "mixed", "xthread", "large", "churn"]
TOUR_REPS = 3
TOUR_MAX_THREADS = 8

# The Debian packages of the peers, and the library each puts on the system.
PEERS = [
    ("tcmalloc", "libtcmalloc-minimal4", "libtcmalloc_minimal.so.4"),
    ("jemalloc", "libjemalloc2", "libjemalloc.so.2"),
    ("mimalloc", "libmimalloc2.0", "libmimalloc.so.2"),
]
LIB_DIRS = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib/x86_64-linux-gnu",
            "/usr/lib64", "/usr/lib"]

DEFAULT_THREADS = [1, 2, 4, 8]
MAX_THREADS = 16
DEFAULT_REPS = 5
QUICK_SCALE = 0.03
# A run stops at this many seconds (times --scale, but never below 0.15:
# the first touches of fresh memory need that long to amortise) even if its
# work is not done, and reports the pairs it did: see bench_driver.c.
MAX_SECONDS_AT_SCALE_1 = 2.0
MIN_TIME_LIMIT_SCALE = 0.15
# --callgrind: pairs in the measured loop (after a 1,000-pair warm-up).
DEFAULT_CALLGRIND_ITERS = 1_000_000

# ---- Errors -----------------------------------------------------------------------


class UsageError(Exception):
    """A bad option: one line on stderr, exit status 2."""


class BenchParser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def fail_usage(message):
    sys.stderr.write("bench: %s (try --help)\n" % message)
    sys.exit(2)


# ---- Finding the allocators --------------------------------------------------------


class Allocator:
    def __init__(self, name, driver, preload=None, package=None, sized=False, peer=False):
        self.name = name          # as it appears in tables and CSVs
        self.driver = driver      # bench_driver build to run
        self.preload = preload    # LD_PRELOAD library, if any
        self.package = package    # Debian package (peers), for the machine line
        self.sized = sized        # a stage linked in, called as hc_malloc / hc_free_sized
        # Whether a failed run of it fails the bench: hcmalloc's own (a stage,
        # the drop-in) and glibc's (the plain driver alone: the bench itself).
        # A peer's failure is reported, and leaves the exit status alone.
        self.must_work = not peer

    def env(self):
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        if self.preload:
            env["LD_PRELOAD"] = self.preload
        return env


def runfiles_root():
    """The directory the manifest's paths are relative to."""
    here = os.path.dirname(os.path.abspath(__file__))  # <runfiles>/<workspace>/bench
    candidates = [os.path.dirname(here)]
    if os.environ.get("RUNFILES_DIR"):
        candidates.append(os.path.join(os.environ["RUNFILES_DIR"], "hcmalloc"))
    for root in candidates:
        if os.path.exists(os.path.join(root, "bench", "allocators.tsv")):
            return root
    sys.stderr.write("bench: cannot find bench/allocators.tsv; run me with `bazel run //bench`\n")
    sys.exit(1)


def find_allocators():
    root = runfiles_root()
    plain = None
    built = []
    with open(os.path.join(root, "bench", "allocators.tsv")) as manifest:
        for line in manifest:
            if not line.strip():
                continue
            name, kind, path = line.rstrip("\n").split("\t")
            path = os.path.join(root, path)
            if kind == "driver" and name == "malloc":
                plain = path
            elif kind == "driver":
                built.append(Allocator(name, path, sized=True))
            elif kind == "preload":  # a stage's drop-in malloc library (stage 4)
                built.append(Allocator(name, None, preload=path))
    # The headline first: every allocator through malloc/free, the same call
    # path (glibc, the drop-in, the peers); then the stages' own rows.
    found = [Allocator("glibc", plain)]
    for a in built:
        if a.driver is None:
            a.driver = plain
            found.append(a)
    for name, package, lib in PEERS:
        for d in LIB_DIRS:
            path = os.path.join(d, lib)
            if os.path.exists(path):
                found.append(Allocator(name, plain, preload=path, package=package, peer=True))
                break
    found.extend(a for a in built if a.sized)
    return found


def load_workloads(driver):
    """Fills WORKLOADS from the driver's list (bench/workloads.c)."""
    status, out, err = run_child([driver, "list"], dict(os.environ), timeout_s=30)
    for line in out.splitlines():
        name, article, what = line.split("\t")
        WORKLOADS[name] = (what, article)
    if status != 0 or not WORKLOADS:
        sys.stderr.write("bench: `%s list` gave no workloads: %s\n" % (driver, err.strip() or status))
        sys.exit(1)
    missing = [w for w in TOUR_WORKLOADS if w not in WORKLOADS]
    if missing:
        sys.stderr.write("bench: the tour names workloads the driver lacks: %s\n" % ", ".join(missing))
        sys.exit(1)


# ---- The machine line ---------------------------------------------------------------


def package_version(package):
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() if out.returncode == 0 else "?"
    except (OSError, subprocess.TimeoutExpired):
        return "?"


def machine_line(allocators):
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    glibc = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else "glibc ?"
    peers = ", ".join("%s %s" % (a.name, package_version(a.package)) for a in allocators if a.package)
    return "machine: %s, %d cores, Linux %s, %s%s; load average %.2f at start" % (
        cpu, os.cpu_count() or 0, platform.release(), glibc, ", " + peers if peers else "",
        os.getloadavg()[0])


# ---- Running one child ------------------------------------------------------------------


def run_child(argv, env, timeout_s):
    """Runs argv; returns (exit status, stdout, stderr): status None when it
    ran past timeout_s (and was killed), -N when signal N killed it."""
    try:
        done = subprocess.run(argv, env=env, capture_output=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None, "", "timed out after %d s" % timeout_s
    return done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")


def why_it_failed(status, err):
    """One line for a child that did not report: the tables and results.csv
    carry it."""
    last = err.strip().splitlines()[-1].strip() if err.strip() else ""
    if status is None:
        return last
    if status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = "signal %d" % -status
        return "crashed (%s)%s" % (name, ": " + last if last else "")
    return "exit status %d%s" % (status, ": " + last if last else "")


def parse_fields(text):
    fields = {}
    for word in text.split():
        if "=" in word:
            key, value = word.split("=", 1)
            fields[key] = value
    return fields


class Measurement:
    def __init__(self, ns_per_pair, rss_kib, mapped_kib, mapped_source, cut):
        self.ns_per_pair = ns_per_pair
        self.rss_kib = rss_kib
        self.mapped_kib = mapped_kib
        self.mapped_source = mapped_source
        self.cut = cut


class Skipped(Exception):
    """The allocator cannot run the workload (the driver says why)."""


class RunFailed(Exception):
    """A run gave no figures; str() is why, in one line."""


def measure(alloc, workload, threads, scale):
    max_seconds = MAX_SECONDS_AT_SCALE_1 * max(scale, MIN_TIME_LIMIT_SCALE)
    argv = [alloc.driver, "run", workload, str(threads), repr(scale), repr(max_seconds)]
    status, out, err = run_child(argv, alloc.env(), timeout_s=60 + 10 * max_seconds)
    fields = parse_fields(out)
    if status == 0 and "skipped" in fields:
        raise Skipped(fields["skipped"].replace("_", " "))
    if status != 0 or "wall_ns" not in fields:
        raise RunFailed(why_it_failed(status, err) if status != 0 else "no figures in its output")
    pairs = int(fields["pairs"])
    return Measurement(int(fields["wall_ns"]) / max(pairs, 1), int(fields["peak_rss_kib"]),
                       int(fields["end_mapped_kib"]), fields["mapped_source"], fields["cut"] == "1")


# ---- Timing workloads --------------------------------------------------------------------------


def duration(seconds):
    seconds = max(0, int(round(seconds)))
    return "%dm%02ds" % (seconds // 60, seconds % 60) if seconds >= 60 else "%ds" % seconds


class Progress:
    """The "[step/steps pct%, about T left]" prefix of each progress line: the
    time left is the mean time of a step so far times the steps to go."""

    def __init__(self, steps):
        self.steps, self.step, self.began = steps, 0, time.monotonic()

    def advance(self):
        self.step += 1

    def elapsed(self):
        return time.monotonic() - self.began

    def prefix(self):
        left = self.elapsed() / self.step * (self.steps - self.step) if self.step else 0
        return "[%d/%d %3d%%, about %s left]" % (self.step, self.steps, 100 * self.step // self.steps,
                                               duration(left))


def bench_workloads(args, allocators, out_dir, machine):
    workloads, threads = args.workloads, args.threads
    progress = Progress(len(workloads) * len(threads) * args.reps * len(allocators))
    results = {}
    failures = []  # (allocator, workload, threads, why)
    for wl in workloads:
        rows = {}
        for t in threads:
            samples = {a.name: [] for a in allocators}
            failed, skipped = {}, {}
            for rep in range(args.reps):
                shift = rep % len(allocators)
                for a in allocators[shift:] + allocators[:shift]:
                    progress.advance()
                    if a.name in failed or a.name in skipped:
                        continue  # a failed allocator is not run again at this thread count
                    try:
                        m = measure(a, wl, t, args.scale)
                    except Skipped as e:
                        skipped[a.name] = str(e)
                        continue
                    except RunFailed as e:
                        failed[a.name] = "%s in run %d of %d" % (e, rep + 1, args.reps)
                        failures.append((a, wl, t, failed[a.name]))
                        sys.stderr.write("%s %s threads=%d rep %d/%d %-18s FAILED: %s\n" % (
                            progress.prefix(), wl, t, rep + 1, args.reps, a.name, e))
                        continue
                    samples[a.name].append(m)
                    sys.stderr.write("%s %s threads=%d rep %d/%d %-18s %s ns/pair%s\n" % (
                        progress.prefix(), wl, t, rep + 1, args.reps, a.name, fmt_ns(m.ns_per_pair),
                        " (cut)" if m.cut else ""))
                    sys.stderr.flush()
            for a in allocators:
                ms = samples[a.name]
                if a.name in skipped:
                    rows[(t, a.name)] = {"failed": True, "skipped": skipped[a.name]}
                    continue
                if a.name in failed:
                    rows[(t, a.name)] = {"failed": True, "reason": failed[a.name], "reps": len(ms)}
                    continue
                rows[(t, a.name)] = {
                    "ns": statistics.median(m.ns_per_pair for m in ms),
                    "rss": int(statistics.median(m.rss_kib for m in ms)),
                    "mapped": int(statistics.median(m.mapped_kib for m in ms)),
                    "mapped_source": ms[0].mapped_source,
                    "cut": any(m.cut for m in ms),
                    "reps": len(ms),
                }
            base = rows.get((t, "glibc"))
            for a in allocators:
                r = rows[(t, a.name)]
                if not r.get("failed"):
                    ok = base is not None and not base.get("failed") and base["ns"] > 0
                    r["ratio"] = r["ns"] / base["ns"] if ok else None
        results[wl] = rows
        report.print_table(wl, WORKLOADS[wl], rows, allocators, threads)

    report.write_results_csv(os.path.join(out_dir, "results.csv"), results, workloads, threads, allocators)
    if "churn" in workloads:
        report.write_churn_csv(os.path.join(out_dir, "churn.csv"), results["churn"], threads, allocators)
    # Other work on the machine inflates wall times: say how busy it was.
    machine += ", %.2f at end" % os.getloadavg()[0]
    print()
    print(machine)
    with open(os.path.join(out_dir, "machine.txt"), "w") as f:
        f.write(machine + "\n")
    chart.write_chart(os.path.join(out_dir, "chart.svg"), results, workloads, WORKLOADS, threads, allocators,
                      machine)
    report.write_markdown(os.path.join(out_dir, "results.md"), results, workloads, WORKLOADS, threads,
                          allocators, machine)
    # A peer that crashes on a workload built to break allocators is a
    # finding, not a broken bench: only hcmalloc's failures (or the plain
    # driver's, which is the bench itself) change the exit status.
    ours = [f for f in failures if f[0].must_work]
    for a, wl, t, why in failures:
        sys.stderr.write("bench: %s failed %s at %d thread%s: %s%s\n" % (
            a.name, wl, t, "" if t == 1 else "s", why, "" if a.must_work else " (a peer: reported, exit status unchanged)"))
    sys.stderr.write("bench: %d runs in %s; wrote results.md, results.csv, chart.svg to %s\n"
                     % (progress.step, duration(progress.elapsed()), out_dir))
    if args.tour:
        sys.stderr.write("bench: that was the tour (%s; threads %s; %d rep%s). Every workload at %s "
                         "threads, %d reps (about 20 min on 2 cores): bazel run //bench -- --full\n"
                         % (", ".join(workloads), ",".join(map(str, threads)), args.reps,
                            "" if args.reps == 1 else "s", ", ".join(map(str, DEFAULT_THREADS)), DEFAULT_REPS))
    return 1 if ours else 0


# ---- Counting instructions -------------------------------------------------------------------------


def callgrind_cost(out_file, function):
    """Inclusive cost (Ir) of every call `function` makes, from a callgrind
    output written with --compress-strings=no --compress-pos=no."""
    total = 0
    current = None
    in_call = False
    with open(out_file) as f:
        for line in f:
            if line.startswith("fn="):
                current = line[3:].strip()
                in_call = False
            elif line.startswith("calls="):
                in_call = True
            elif in_call:
                # The line after calls= is the call's inclusive cost: "position Ir".
                if current == function or current.startswith(function + "'"):
                    total += int(line.split()[1])
                in_call = False
    return total


def bench_callgrind(args, allocators, out_dir):
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        sys.stderr.write("bench: --callgrind needs valgrind: run tools/setup.sh\n")
        return 1
    iters = args.callgrind_iters
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for a in allocators:
            row = [a.name]
            for keep in (0, 1):
                out_file = os.path.join(tmp, "%s.%d.out" % (a.name, keep))
                argv = [valgrind, "--tool=callgrind", "--callgrind-out-file=" + out_file,
                        "--compress-strings=no", "--compress-pos=no",
                        a.driver, "callgrind", str(iters), str(keep)]
                status, _, err = run_child(argv, a.env(), timeout_s=3600)
                if status != 0:
                    sys.stderr.write("bench: callgrind of %s failed:\n%s" % (a.name, err))
                    return 1
                per_pair = callgrind_cost(out_file, "bench_cg_loop") / iters
                row.append(per_pair)
                sys.stderr.write("callgrind %-20s %s: %.3f instructions per pair\n"
                                 % (a.name, "warm (one block kept live)" if keep else "plain", per_pair))
            rows.append(row)

    def fmt(v):
        # One decimal: jemalloc's periodic housekeeping makes its figure a
        # fraction whose second decimal moves with the loop length (67.28 at
        # 1M pairs, 67.27 at 10M); the first does not.
        return "%d" % v if v == int(v) else "%.1f" % v

    print()
    print("== callgrind: instructions in malloc(32) + free per pair, loop excluded (%s pairs)" % fmt_int(iters))
    print("%-20s %16s %16s" % ("allocator", "instr/pair", "warm instr/pair"))
    for name, plain, warm in rows:
        print("%-20s %16s %16s" % (name, fmt(plain), fmt(warm)))
    print("  warm: one more 32 B block stays live throughout the loop")
    with open(os.path.join(out_dir, "callgrind.csv"), "w") as f:
        f.write("allocator,instr_per_pair,instr_per_pair_warm\n")
        for name, plain, warm in rows:
            f.write("%s,%s,%s\n" % (name, fmt(plain), fmt(warm)))
    sys.stderr.write("bench: wrote callgrind.csv to %s\n" % out_dir)
    return 0


# ---- --latency: every malloc timed ------------------------------------------------------------

LATENCY_FIGURES = re.compile(r"over (\d+) calls, ns: p50 (\d+), p99 (\d+), p99.9 (\d+), p99.99 (\d+), max (\d+)")


def bench_latency(args, allocators, out_dir):
    """bench/latency.c under every malloc/free allocator (the stages' sized
    rows have no malloc to preload): each malloc timed, the percentiles the
    median over the repetitions, interleaved and rotated like the timing
    runs; writes latency.csv."""
    program = os.path.join(runfiles_root(), "bench", "latency")
    order = [a for a in allocators if not a.sized]
    runs = {a.name: [] for a in order}
    live_mib = "%g" % (64 * args.scale)
    for rep in range(args.reps):
        for a in order[rep % len(order):] + order[:rep % len(order)]:
            status, out, err = run_child([program, live_mib], a.env(), timeout_s=600)
            found = LATENCY_FIGURES.search(out)
            if status != 0 or not found:
                sys.stderr.write("bench: latency under %s failed: %s\n" % (a.name, why_it_failed(status, err)))
                if a.must_work:
                    return 1
                continue
            runs[a.name].append([int(x) for x in found.groups()[1:]])
            sys.stderr.write("latency %-20s rep %d/%d: p99 %s ns\n" % (a.name, rep + 1, args.reps, found.group(3)))
    heads = ["p50", "p99", "p99.9", "p99.99", "max"]
    print()
    print("== latency: ns per malloc, every call timed (bench/latency.c, %s MiB live; median of %d)"
          % (live_mib, args.reps))
    print("%-20s" % "allocator" + "".join("%12s" % h for h in heads))
    with open(os.path.join(out_dir, "latency.csv"), "w") as f:
        f.write("allocator," + ",".join("ns_" + h.replace(".", "_") for h in heads) + "\n")
        for a in order:
            if not runs[a.name]:
                continue
            medians = [statistics.median(r[i] for r in runs[a.name]) for i in range(len(heads))]
            print("%-20s" % a.name + "".join("%12d" % m for m in medians))
            f.write(a.name + "," + ",".join("%d" % m for m in medians) + "\n")
    sys.stderr.write("bench: wrote latency.csv to %s\n" % out_dir)
    return 0


# ---- --heapmap: pictures of one run ------------------------------------------------------------


def bench_heapmap(args, out_dir):
    """Runs args.heapmap once with the plain driver under the traced drop-in;
    writes heapmap-W-peak.svg, heapmap-W-end.svg, trace-W.txt, traffic-W.svg."""
    import trace_svg  # bench/trace_svg.py, beside this file
    root = runfiles_root()
    driver = os.path.join(root, "bench", "driver_malloc")
    preload = os.path.join(root, "bench", "preload_trace")
    w = args.heapmap
    threads = args.threads[0] if args.threads_given and len(args.threads) == 1 else 2
    trace_file = os.path.join(out_dir, "trace-%s.txt" % w)
    env = dict(os.environ, LD_PRELOAD=preload, HCMALLOC_TRACE=trace_file,
               BENCH_HEAPMAP=os.path.join(out_dir, "heapmap-" + w))
    max_seconds = MAX_SECONDS_AT_SCALE_1 * max(args.scale, MIN_TIME_LIMIT_SCALE)
    argv = [driver, "run", w, str(threads), repr(args.scale), repr(max_seconds)]
    status, out, err = run_child(argv, env, timeout_s=120 + 10 * max_seconds)
    if status != 0:
        sys.stderr.write("bench: --heapmap %s failed: %s\n" % (w, err.strip() or "exit status %d" % status))
        return 1
    with open(trace_file) as f:
        picture = trace_svg.draw(trace_svg.parse(f.read()),
                                 "hcmalloc tier traffic: %s, %d thread%s (stage 4, traced drop-in)"
                                 % (w, threads, "" if threads == 1 else "s"))
    with open(os.path.join(out_dir, "traffic-%s.svg" % w), "w") as f:
        f.write(picture)
    print("heapmap %s, %d threads, scale %g: %s" % (w, threads, args.scale, out.strip()))
    for name in ("heapmap-%s-peak.svg" % w, "heapmap-%s-end.svg" % w, "trace-%s.txt" % w, "traffic-%s.svg" % w):
        print("  wrote %s" % os.path.join(out_dir, name))
    return 0


# ---- Options -------------------------------------------------------------------------------------------


def parse_list(text, what):
    items = [x.strip() for x in text.split(",") if x.strip()]
    if not items:
        raise UsageError("%s: empty list" % what)
    return items


def tour_threads():
    """1, and as many threads as this process may run on at once (at most
    TOUR_MAX_THREADS): what fits the machine."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return sorted({1, max(1, min(cores, TOUR_MAX_THREADS))})


def parse_args(argv, allocators):
    names = [a.name for a in allocators]
    p = BenchParser(
        prog="bazel run //bench --",
        description="Compares every hcmalloc stage with glibc malloc and the peers found "
                    "(tcmalloc, jemalloc, mimalloc by LD_PRELOAD). Tables go to stdout, "
                    "progress to stderr, results.csv and chart.svg to the output folder.",
        epilog="allocators found here: %s. Workloads: %s." % (", ".join(names), ", ".join(WORKLOADS)))
    p.add_argument("--full", action="store_true",
                   help="the whole matrix: every workload at threads %s, %d reps (about 20 min on 2 "
                        "cores) instead of the tour" % (",".join(map(str, DEFAULT_THREADS)), DEFAULT_REPS))
    p.add_argument("--workloads", metavar="LIST", default=None,
                   help="comma-separated workloads, run as --full runs them (default: the tour, %s)"
                        % ",".join(TOUR_WORKLOADS))
    p.add_argument("--list-workloads", action="store_true",
                   help="print the workloads, one a line, and exit")
    p.add_argument("--allocators", metavar="LIST", default=None,
                   help="comma-separated allocators (default: every one found, and each --peer)")
    p.add_argument("--peer", metavar="NAME=LIBRARY", action="append", default=[],
                   help="one more malloc library to compare, run like the peers (LD_PRELOAD of the "
                        "plain driver); may be repeated")
    p.add_argument("--threads", metavar="LIST", default=None,
                   help="thread counts, 1..%d (default: the tour 1 and the cores, at most %d; --full "
                        "and --workloads %s)" % (MAX_THREADS, TOUR_MAX_THREADS, ",".join(map(str, DEFAULT_THREADS))))
    p.add_argument("--reps", metavar="N", type=int, default=None,
                   help="repetitions; the median is reported (default: the tour %d, --full and "
                        "--workloads %d)" % (TOUR_REPS, DEFAULT_REPS))
    p.add_argument("--scale", metavar="X", type=float, default=None,
                   help="multiplies every workload's size and time limit (default: 1)")
    p.add_argument("--quick", action="store_true",
                   help="one repetition, small sizes (scale %g): a smoke run under a minute" % QUICK_SCALE)
    p.add_argument("--callgrind", action="store_true",
                   help="instead of timing: instructions per malloc(32)+free pair under valgrind "
                        "--tool=callgrind, for every allocator; writes callgrind.csv")
    p.add_argument("--callgrind-iters", metavar="N", type=int, default=DEFAULT_CALLGRIND_ITERS,
                   help="pairs in the measured callgrind loop (default: %s)" % fmt_int(DEFAULT_CALLGRIND_ITERS))
    p.add_argument("--side-threads", metavar="N", type=int, default=300,
                   help="manythreads, latethreads: the other threads, 1..4000 (default: 300)")
    p.add_argument("--latency", action="store_true",
                   help="instead: time every malloc of bench/latency.c's workload under each malloc/free "
                        "allocator; p50..p99.99 and max, median of --reps")
    p.add_argument("--heapmap", metavar="WORKLOAD", default=None,
                   help="instead: run WORKLOAD once under stage 4's traced drop-in and write its heap "
                        "maps (at the peak and the end) and tier-traffic picture")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="output folder (default: bench-results/ at the workspace root)")
    args = p.parse_args(argv)

    # The tour unless the whole matrix or named workloads are asked for.
    args.tour = not args.full and args.workloads is None
    if args.full and args.workloads is not None:
        raise UsageError("--full runs every workload: name --workloads or --full, not both")
    if args.workloads is None:
        args.workloads = ",".join(TOUR_WORKLOADS if args.tour else WORKLOADS)
    args.threads_given = args.threads is not None
    if args.threads is None:
        args.threads = ",".join(map(str, tour_threads() if args.tour else DEFAULT_THREADS))
    args.workloads = parse_list(args.workloads, "--workloads")
    for w in args.workloads:
        if w not in WORKLOADS:
            raise UsageError("--workloads: unknown workload '%s' (known: %s)" % (w, ", ".join(WORKLOADS)))
    for spec in args.peer:
        name, _, library = spec.partition("=")
        if not name or not library or not os.path.isfile(library):
            raise UsageError("--peer: '%s' is not NAME=LIBRARY, with LIBRARY a file" % spec)
        if name in names:
            raise UsageError("--peer: there is already an allocator '%s'" % name)
        extra = Allocator(name, allocators[0].driver, preload=os.path.abspath(library), peer=True)
        # Among the headline rows, after the peers found, before the stages.
        allocators.insert(sum(1 for a in allocators if not a.sized), extra)
        names = [a.name for a in allocators]
    wanted = parse_list(args.allocators, "--allocators") if args.allocators is not None else names
    for w in wanted:
        if w not in names:
            known = [p[0] for p in PEERS]
            why = " (its library is not installed: run tools/setup.sh)" if w in known else ""
            raise UsageError("--allocators: no allocator '%s'%s; found: %s" % (w, why, ", ".join(names)))
    args.allocators = [a for a in allocators if a.name in wanted]
    try:
        args.threads = sorted(set(int(t) for t in parse_list(args.threads, "--threads")))
    except ValueError:
        raise UsageError("--threads: '%s' is not a list of numbers" % args.threads)
    if any(t < 1 or t > MAX_THREADS for t in args.threads):
        raise UsageError("--threads: each count must be 1..%d" % MAX_THREADS)
    if args.reps is None:
        args.reps = 1 if args.quick else TOUR_REPS if args.tour else DEFAULT_REPS
    if args.reps < 1:
        raise UsageError("--reps: must be at least 1")
    if args.scale is None:
        args.scale = QUICK_SCALE if args.quick else 1.0
    if not args.scale > 0 or math.isinf(args.scale):
        raise UsageError("--scale: must be a positive number")
    if not 1 <= args.side_threads <= 4000:
        raise UsageError("--side-threads: must be 1..4000")
    os.environ["BENCH_SIDE_THREADS"] = str(args.side_threads)  # read by bench_driver
    if args.callgrind_iters < 1:
        raise UsageError("--callgrind-iters: must be at least 1")
    if args.heapmap is not None and args.heapmap not in WORKLOADS:
        raise UsageError("--heapmap: unknown workload '%s' (known: %s)" % (args.heapmap, ", ".join(WORKLOADS)))
    return args


def tree_line():
    """The commit the workspace is at, with "+ changes" when its tracked
    files differ from it: the tree whose figures these are."""
    workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY") or os.getcwd()
    try:
        head = subprocess.run(["git", "-C", workspace, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=30)
        if head.returncode != 0:
            return "not a git checkout"
        changed = subprocess.run(["git", "-C", workspace, "diff", "--quiet", "HEAD", "--"],
                                 capture_output=True, timeout=30).returncode != 0
    except (OSError, subprocess.TimeoutExpired):
        return "not a git checkout"
    return head.stdout.strip() + (" + changes" if changed else "")


def output_dir(requested):
    if requested is None:
        base = os.environ.get("BUILD_WORKSPACE_DIRECTORY") or os.getcwd()
        return os.path.join(base, "bench-results")
    # Relative to where the user typed the command, not Bazel's runfiles.
    return os.path.join(os.environ.get("BUILD_WORKING_DIRECTORY") or os.getcwd(), requested)


def main(argv):
    allocators = find_allocators()
    load_workloads(allocators[0].driver)
    try:
        args = parse_args(argv, allocators)
    except UsageError as e:
        fail_usage(str(e))
    if args.list_workloads:
        print("\n".join(WORKLOADS))
        return 0
    out_dir = output_dir(args.out)
    os.makedirs(out_dir, exist_ok=True)
    allocators = args.allocators

    # A preload that did not take (a missing or broken library) would silently
    # measure glibc under the peer's name: check what malloc resolves to. A
    # peer that does not load is left out; hcmalloc that does not is an error.
    loaded = []
    for a in allocators:
        status, out, err = run_child([a.driver, "name"], a.env(), timeout_s=30)
        name = out.strip()
        expected = os.path.basename(a.preload) if a.preload else None
        if status != 0 or (expected and os.path.basename(name) != expected):
            sys.stderr.write("bench: %s does not load (malloc is %s) %s%s\n" % (
                a.name, name or "?", err.strip(), "" if a.must_work else "; left out"))
            if a.must_work:
                return 1
            continue
        loaded.append(a)
    allocators = loaded

    machine = machine_line(allocators)
    with open(os.path.join(out_dir, "machine.txt"), "w") as f:
        f.write(machine + "\n")
    # What was run, and on which tree, for bench/publish.py to print beside
    # the results.
    with open(os.path.join(out_dir, "command.txt"), "w") as f:
        f.write("bazel run //bench" + (" -- " + " ".join(argv) if argv else "") + "\n")
    with open(os.path.join(out_dir, "tree.txt"), "w") as f:
        f.write(tree_line() + "\n")
    print(machine)
    sys.stderr.write("bench: allocators: %s\n" % " ".join(a.name for a in allocators))
    if args.callgrind:
        return bench_callgrind(args, allocators, out_dir)
    if args.heapmap:
        return bench_heapmap(args, out_dir)
    if args.latency:
        return bench_latency(args, allocators, out_dir)
    sys.stderr.write("bench: %sworkloads %s, threads %s, %d rep%s, scale %g\n" % (
        "the tour: " if args.tour else "", ",".join(args.workloads), ",".join(map(str, args.threads)),
        args.reps, "" if args.reps == 1 else "s", args.scale))
    return bench_workloads(args, allocators, out_dir, machine)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
