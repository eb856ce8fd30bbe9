#!/bin/bash
# tools/measure/fuzz.sh — runs tests/alloc_fuzz.cc under libFuzzer against each stage.
#
# Bazel's toolchain here is gcc, which has no libFuzzer, so this script asks
# Bazel only what a stage is made of (its C sources and defines, by `bazel
# query`) and compiles that with clang -fsanitize=fuzzer,address itself.
# Each stage runs a fixed number of inputs from a fixed seed, starting from
# the seed corpus in tests/fuzz_corpus/alloc_fuzz (left unchanged: new
# inputs go to a scratch directory). A failed check or an ASan report stops
# the run and keeps the input that caused it under $HC_FUZZ_OUT. Without
# HC_FUZZ_OUT the scratch directory is a temporary one, removed when every
# stage passed and kept (its path printed) when one failed.
#
# usage: tools/measure/fuzz.sh [STAGE_LABEL...]
#   default: every stage package's allocator, //stageN_x:hcmalloc, so a new
#   stage is fuzzed as soon as it lands (tools/extra_checks.sh runs this).
# knobs: HC_FUZZ_RUNS (default 20000 per stage), HC_FUZZ_SEED (default 1),
#        HC_FUZZ_OUT (default a temporary directory, removed after a clean run)
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ $# -gt 0 ]; then
    stages=("$@")
else
    mapfile -t stages < <(bazel query --noshow_progress 'attr(name, "^hcmalloc$", kind(cc_library, //...))' 2>/dev/null |
        grep -E '^//stage[0-9]+_[a-z0-9_]+:hcmalloc$' | sort -t_ -k1,1V)
fi
if [ ${#stages[@]} -eq 0 ]; then
    echo "fuzz: no stage found (bazel query //stageN_x:hcmalloc)" >&2
    exit 1
fi

runs=${HC_FUZZ_RUNS:-20000}
seed=${HC_FUZZ_SEED:-1}
out=${HC_FUZZ_OUT:-}
scratch_is_ours=0
if [ -z "$out" ]; then
    out=$(mktemp -d -t hcmalloc-fuzz.XXXXXX)
    scratch_is_ours=1
fi
corpus=tests/fuzz_corpus/alloc_fuzz

command -v clang >/dev/null || { echo "fuzz: clang is not installed: run tools/setup.sh" >&2; exit 1; }

# Prints "FILES|DEFINES" for a stage: its C sources in this workspace and the
# defines of every cc_library it depends on, as Bazel sees them.
describe_stage() {
    bazel query --noshow_progress --output=xml "kind(cc_library, deps($1))" 2>/dev/null | python3 -c '
import sys, xml.etree.ElementTree as ET
files, defines = [], []
for rule in ET.parse(sys.stdin).getroot().iter("rule"):
    if rule.get("name").startswith("@"):
        continue
    for lst in rule.iter("list"):
        if lst.get("name") == "srcs":
            for label in lst.iter("label"):
                name = label.get("value")
                if name.endswith(".c"):
                    files.append(name.lstrip("/").replace(":", "/"))
        if lst.get("name") in ("defines", "local_defines"):
            defines += ["-D" + s.get("value") for s in lst.iter("string")]
print(" ".join(sorted(set(files))) + "|" + " ".join(defines))
'
}

status=0
for stage in "${stages[@]}"; do
    name=${stage#//}
    name=${name%%:*}
    desc=$(describe_stage "$stage")
    read -r -a sources <<<"${desc%%|*}"
    read -r -a defines <<<"${desc#*|}"
    if [ ${#sources[@]} -eq 0 ]; then
        echo "fuzz: bazel query found no sources for $stage" >&2
        exit 1
    fi
    work="$out/$name"
    mkdir -p "$work/corpus" "$work/crashes" "$work/obj"
    objs=()
    for src in "${sources[@]}"; do
        obj="$work/obj/$(echo "$src" | tr / _).o"
        clang -std=c11 -g -O1 -I. "${defines[@]}" -fsanitize=fuzzer-no-link,address \
            -fno-omit-frame-pointer -c "$src" -o "$obj"
        objs+=("$obj")
    done
    clang++ -std=c++17 -g -O1 -I. -fsanitize=fuzzer,address -fno-omit-frame-pointer \
        tests/alloc_fuzz.cc "${objs[@]}" -pthread -o "$work/alloc_fuzz"
    echo "fuzz: $name: ${#sources[@]} sources, $runs runs from seed $seed"
    if "$work/alloc_fuzz" -runs="$runs" -seed="$seed" -max_len=4096 -timeout=60 \
        -print_final_stats=1 -artifact_prefix="$work/crashes/" "$work/corpus" "$corpus" \
        >"$work/log" 2>&1; then
        grep -E "^(#[0-9]+.*DONE|Done|stat::number_of_executed_units|stat::peak_rss_mb)" "$work/log" | sed "s/^/fuzz: $name: /"
        echo "fuzz: $name: passed; $(ls "$work/corpus" | wc -l) new inputs"
    else
        tail -40 "$work/log"
        echo "fuzz: $name: FAILED; the input is in $work/crashes/" >&2
        status=1
    fi
done
if [ $status -eq 0 ] && [ $scratch_is_ours -eq 1 ]; then
    rm -rf "$out"
elif [ $status -eq 0 ]; then
    echo "fuzz: the new inputs are in $out/STAGE/corpus"
fi
exit $status
