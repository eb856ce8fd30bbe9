#!/bin/bash
# stage4_reclaim/checks/profile_test.sh SITES SITES_FP SIZED_DELETE PROFILER_LIB PLAIN_LIB
# — the heap profiler end to end, read by google-pprof (Debian's
# google-perftools, tools/setup.sh):
#   1. profile_sites (linked with libhcmalloc_profiler.so; with and without
#      frame pointers; with libunwind and with libgcc's unwinder) dumps its live heap with hc_dump_heap_profile; pprof's
#      --text must put its sites in the order of their true sizes, each
#      within TOLERANCE of the truth, and main's cumulative share must be
#      the whole program's (a whole stack); --alloc_space must show what
#      site_churn allocated and freed. The sample distance is 8 KiB here, so
#      the standard deviation of a site's estimate is at most sqrt(T/B):
#      2.8% for the 10 MiB site, 1.4% for 40 MiB (docs/profiling.md). The
#      bound is 15%: over five standard deviations for every site.
#   2. HCMALLOC_PROFILE with HCMALLOC_PROFILE_INTERVAL_BYTES=16m writes a
#      profile per 16 MiB allocated (the program allocates about 207 MiB)
#      and one at exit (with HCMALLOC_PROFILE_INTERVAL_MIN_MS=0; an hour's
#      gap leaves the first and the exit's); a library dlopened between two dumps is in the
#      second's MAPPED_LIBRARIES (the section is kept between dumps).
#      A sampled block reallocated to its usable size stays where it is; a
#      fork from a signal handler that interrupted a sampled malloc returns.
#   3. HCMALLOC_LEAK_CHECK=2 estimates each site's live blocks (leaked or
#      reachable) within TOLERANCE when sampled, and with every allocation
#      sampled HCMALLOC_LEAK_CHECK=1 reports exactly the leaked blocks: 63
#      of site_leak's 64 x 512 bytes (the last one's address is in a
#      global, `sink`: reachable), nothing from site_churn (freed with free)
#      nor site_deleted (sized operator delete, preloaded), and 9 of the 10
#      objects site_kept leaves (the same); and a leak profile pprof reads.
#      (leak_check_test.sh checks reachable against leaked.)
#   4. libhcmalloc.so (no sampler) warns that the variables are ignored.
set -u
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
sites=$(abs "$1")
sites_fp=$(abs "$2")
sized_delete=$(abs "$3")
profiler=$(abs "$4")
plain=$(abs "$5")
work="${TEST_TMPDIR:-$(mktemp -d)}"
# A leak check without HCMALLOC_PROFILE writes its profile to $TMPDIR (/tmp
# when unset): here, the test's own folder, so that no run leaves one in /tmp.
export TMPDIR="$work"
TOLERANCE=0.15
status=0
fail() { echo "FAIL: $*"; status=1; }

if ! command -v google-pprof >/dev/null; then
    echo "FAIL: google-pprof is missing (apt-get install google-perftools: tools/setup.sh)"
    exit 1
fi

# pprof's --text rows: "flat flat% sum% cum cum% name"; prints NAME FLAT CUM.
pprof_rows() { google-pprof --text "$@" 2>/dev/null | awk 'NF >= 6 && $2 ~ /%$/ {print $6, $1, $4}'; }

# near NAME MEASURED TRUTH: within TOLERANCE of the truth (MiB).
near() {
    if awk -v m="$2" -v t="$3" -v tol="$TOLERANCE" 'BEGIN { d = m - t; if (d < 0) d = -d; exit !(d <= tol * t) }'; then
        echo "PASS $1: $2 MiB, truth $3 MiB"
    else
        fail "$1: $2 MiB, truth $3 MiB (more than $TOLERANCE off)"
    fi
}

# ---- 1. The live heap and the cumulative allocations, through pprof ------------
# profile_sites under libgcc's unwinder too (the fallback where libunwind8
# is not installed); the same program, under another name.
ln -sf "$sites" "$work/profile_sites_libgcc"
for program in "$sites" "$sites_fp" "$work/profile_sites_libgcc"; do
    name=$(basename "$program")
    unwinder=default
    [ "$name" = profile_sites_libgcc ] && unwinder=libgcc
    HCMALLOC_PROFILE_UNWINDER=$unwinder HCMALLOC_PROFILE_SAMPLE_BYTES=8k "$program" dump "$work/$name.heap" >/dev/null ||
        { fail "$name dump exited $?"; continue; }
    pprof_rows "$program" "$work/$name.heap" >"$work/$name.live"
    # The top rows by flat size, in the truth's order: 40, 20, 20, 19.5, 10 MiB.
    top=$(head -5 "$work/$name.live" | awk '{print $1}' | tr '\n' ' ')
    case $top in
        "site_pages site_even site_odd site_huge site_tiny "* | "site_pages site_odd site_even site_huge site_tiny "* |\
        "site_pages site_even site_huge site_odd site_tiny "* | "site_pages site_odd site_huge site_even site_tiny "* |\
        "site_pages site_huge site_even site_odd site_tiny "* | "site_pages site_huge site_odd site_even site_tiny "*)
            echo "PASS $name: pprof's top five: $top" ;;
        *) fail "$name: pprof's top five are: $top"; head -8 "$work/$name.live" ;;
    esac
    flat() { awk -v f="$1" '$1 == f {print $2}' "$work/$name.live"; }
    near "$name site_pages" "$(flat site_pages)" 40
    near "$name site_even" "$(flat site_even)" 20
    near "$name site_odd" "$(flat site_odd)" 20
    near "$name site_huge" "$(flat site_huge)" 19.53
    near "$name site_tiny" "$(flat site_tiny)" 10.0
    # A whole stack reaches main: its cumulative share is everything the sites hold.
    main_cum=$(awk '$1 == "main" {print $3}' "$work/$name.live")
    near "$name main (cumulative)" "${main_cum:-0}" 109.5
    churn=$(pprof_rows --alloc_space "$program" "$work/$name.heap" | awk '$1 == "site_churn" {print $2}')
    near "$name site_churn (allocated, all freed)" "${churn:-0}" 97.66
    if grep -q site_churn "$work/$name.live"; then
        fail "$name: site_churn's freed blocks are in the live heap"
    fi
done

# ---- 2. Periodic profiles and the one at exit --------------------------------------
HCMALLOC_PROFILE="$work/run" HCMALLOC_PROFILE_INTERVAL_BYTES=16m HCMALLOC_PROFILE_SAMPLE_BYTES=64k \
    HCMALLOC_PROFILE_INTERVAL_MIN_MS=0 "$sites" >/dev/null || fail "the HCMALLOC_PROFILE run exited $?"
count=$(ls "$work"/run.*.heap 2>/dev/null | wc -l)
if [ "$count" -ge 11 ] && [ "$count" -le 15 ]; then
    echo "PASS HCMALLOC_PROFILE_INTERVAL_BYTES=16m: $count profiles for about 207 MiB allocated"
else
    fail "HCMALLOC_PROFILE_INTERVAL_BYTES=16m: $count profiles, not 11..15 (12 or 13 periodic + 1 at exit)"
fi
# The minimum gap: an hour between interval profiles leaves the first one
# (never skipped) and the one at exit.
HCMALLOC_PROFILE="$work/gap" HCMALLOC_PROFILE_INTERVAL_BYTES=16m HCMALLOC_PROFILE_SAMPLE_BYTES=64k \
    HCMALLOC_PROFILE_INTERVAL_MIN_MS=3600000 "$sites" >/dev/null || fail "the gap run exited $?"
count=$(ls "$work"/gap.*.heap 2>/dev/null | wc -l)
if [ "$count" -eq 2 ]; then
    echo "PASS HCMALLOC_PROFILE_INTERVAL_MIN_MS=3600000: 2 profiles (the first interval's, the exit's)"
else
    fail "HCMALLOC_PROFILE_INTERVAL_MIN_MS=3600000: $count profiles, not 2 (1 periodic + 1 at exit)"
fi
last=$(ls "$work"/run.*.heap 2>/dev/null | sort | tail -1)
if [ -n "$last" ] && head -1 "$last" | grep -q '^heap profile: .*@ heap_v2/65536$' && grep -q '^MAPPED_LIBRARIES:$' "$last"; then
    echo "PASS the exit profile $(basename "$last") is a heap_v2 profile with MAPPED_LIBRARIES"
else
    fail "the exit profile is not in the legacy heap format: $(head -1 "$last")"
fi

# The kept MAPPED_LIBRARIES is read again when the loader adds an object.
# libz (zlib1g: Debian's "required" priority) is not one profile_sites loads.
late=libz.so.1
"$sites" dlopen "$work/before.heap" "$work/after.heap" "$late" >/dev/null || fail "the dlopen run exited $?"
if ! sed -n '/^MAPPED_LIBRARIES:$/,$p' "$work/before.heap" | grep -q "/$late" &&
    sed -n '/^MAPPED_LIBRARIES:$/,$p' "$work/after.heap" | grep -q "/$late"; then
    echo "PASS MAPPED_LIBRARIES names $late once it is loaded, not before"
else
    fail "MAPPED_LIBRARIES does not follow dlopen($late)"
fi

# fork() from a signal handler that interrupted a sampled malloc (every
# allocation sampled: the profile lock is held most of the time) in a
# single-threaded program: the fork takes no lock, the profiler's neither
# (it hung every run when the profiler's own pthread_atfork handler took it).
if out=$(HCMALLOC_PROFILE_SAMPLE_BYTES=1 timeout 60 "$sites" sigfork 2>&1); then
    echo "PASS fork from a signal handler: $out"
else
    fail "fork from a signal handler (exit $?: 124 is a hang): $out"
fi

# A sampled block is a span of its own: realloc to its usable size keeps it
# (glibc's tst-realloc failed on it), with every allocation sampled.
if out=$(HCMALLOC_PROFILE_SAMPLE_BYTES=1 "$sites" realloc 2>&1); then
    echo "PASS sampled blocks: $out"
else
    fail "sampled blocks: $out"
fi

# ---- 3. The leak check, exact ------------------------------------------------------------
HCMALLOC_LEAK_CHECK=1 HCMALLOC_PROFILE_SAMPLE_BYTES=1 HCMALLOC_PROFILE="$work/leak" \
    "$sites" leak >/dev/null 2>"$work/leak.err" || fail "the leak-check run exited $?"
block=$(grep -A1 'leak: ~32256 bytes in ~63 blocks of 512 bytes (63 sampled), allocated at:' "$work/leak.err")
if grep -q 'site_leak' <<<"$block"; then
    echo "PASS leak check: site_leak's 63 unreferenced x 512 bytes, exactly"
else
    fail "leak check: no exact report of site_leak"; cat "$work/leak.err"
fi
if grep -q 'site_churn' "$work/leak.err"; then
    fail "leak check: site_churn's freed blocks are reported"
fi
leak_profile=$(ls "$work"/leak.*.leak.heap 2>/dev/null | head -1)
if [ -n "$leak_profile" ] && [ "$(pprof_rows "$sites" "$leak_profile" | head -1 | awk '{print $1}')" = site_leak ]; then
    echo "PASS leak profile: pprof's top line is site_leak"
else
    fail "leak profile: pprof's top line is not site_leak"
fi

# Sampled (T = 8 KiB): the report's own estimates (profile_sampler.c's weights, not
# pprof's) per site, leaked and reachable together (`keep` holds them all
# in a global array), against the truth, as in part 1.
HCMALLOC_LEAK_CHECK=2 HCMALLOC_PROFILE_SAMPLE_BYTES=8k "$sites" keep >/dev/null 2>"$work/keep.err" ||
    fail "the sampled leak-check run exited $?"
estimate() { # SITE: the MiB the report's entries whose first frame is SITE stand for
    # (an entry sampled before the unwinder was primed has no frames: the
    # next line may be the next entry's)
    awk -v site="$1" '/^  (leak|reachable): ~/ { bytes = substr($2, 2); first = 1; next }
                      first && /^    0x/ { if ($2 ~ "^" site "\\+") sum += bytes }
                      { first = 0 }
                      END { printf "%.2f", sum / 1048576 }' "$work/keep.err"
}
near "leak check site_pages" "$(estimate site_pages)" 40
near "leak check site_tiny" "$(estimate site_tiny)" 10.0
near "leak check site_huge" "$(estimate site_huge)" 19.53

rm -f "$work"/hcmalloc.*.leak.heap # the sampled run's, if it found a leak
HCMALLOC_LEAK_CHECK=1 HCMALLOC_PROFILE_SAMPLE_BYTES=1 LD_PRELOAD="$profiler" \
    "$sized_delete" >/dev/null 2>"$work/sized.err" || fail "the sized-delete run exited $?"
if grep -A1 'leak: ~1800 bytes in ~9 blocks of 200 bytes (9 sampled)' "$work/sized.err" | grep -q site_kept &&
    ! grep -q site_deleted "$work/sized.err"; then
    echo "PASS leak check under LD_PRELOAD: site_kept's 9 unreferenced objects, none of site_deleted's (sized delete)"
else
    fail "leak check: sized delete"; cat "$work/sized.err"
fi
# That run leaks for sure (every block sampled, nine unreferenced) and names
# no HCMALLOC_PROFILE, so its leak profile went to $TMPDIR (a sampled run
# writes one only when it finds a leak).
if ls "$work"/hcmalloc.*.leak.heap >/dev/null 2>&1; then
    echo "PASS leak check without HCMALLOC_PROFILE: its profile is \$TMPDIR/hcmalloc.<pid>.leak.heap"
else
    fail "leak check without HCMALLOC_PROFILE: no hcmalloc.<pid>.leak.heap in \$TMPDIR ($work)"
fi

# ---- 4. The plain library has no sampler, and says so ---------------------------------
HCMALLOC_PROFILE="$work/plain" LD_PRELOAD="$plain" "$sized_delete" >/dev/null 2>"$work/plain.err"
if grep -q 'ignored.*libhcmalloc_profiler.so' "$work/plain.err" && ! ls "$work"/plain.*.heap >/dev/null 2>&1; then
    echo "PASS libhcmalloc.so: warns that HCMALLOC_PROFILE is ignored, writes nothing"
else
    fail "libhcmalloc.so with HCMALLOC_PROFILE"; cat "$work/plain.err"
fi
exit $status
