#!/bin/bash
# tools/setup.sh — installs, from Debian's archive, everything hcmalloc's
# build, tests and bench need. Does nothing when it is all there already.
set -euo pipefail

packages=(
    bazel-bootstrap        # Bazel 4.2.3, builds offline with the WORKSPACE here
    bazel-rules-java       # local repositories the WORKSPACE points at
    bazel-platforms
    build-essential        # gcc 12 (TSan, ASan)
    clang                  # libFuzzer targets (tools/measure/fuzz.sh)
    libclang-rt-14-dev     # ... and its runtime, only "recommended" by clang
    libgtest-dev           # googletest, prebuilt (third_party/googletest)
    valgrind               # memcheck test flavour, callgrind instruction counts
    libtcmalloc-minimal4   # bench peers
    libjemalloc2
    libmimalloc2.0
    python3                # the drop-in tests run real programs
    sqlite3
    gzip
    util-linux             # setarch, for the TSan flavour
    google-perftools       # google-pprof, which reads the heap profiles (profile_test)
    libunwind8             # the heap profiler's fast unwinder (dlopen'd; libgcc's otherwise)
    pkg-config             # tools/install/install.sh's .pc files, built with (//tools/install:install_test)
)

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "setup: every package is installed"
    exit 0
fi

echo "setup: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
"${sudo_cmd[@]}" apt-get update -q
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
