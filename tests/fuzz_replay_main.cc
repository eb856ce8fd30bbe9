// tests/fuzz_replay_main.cc — runs a fuzz target without libFuzzer.
//
// `bazel test` builds with gcc, which has no libFuzzer: this main feeds the
// target every file named on the command line (the seed corpus, and any
// crash input worth keeping), then HC_FUZZ_REPLAY_RANDOM (default 1000)
// pseudo-random inputs from a fixed seed, so the same programs run every
// time. A failed check aborts inside the target, which fails the test.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <fstream>
#include <iterator>
#include <random>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
    size_t files = 0;
    for (int i = 1; i < argc; i++) {
        std::ifstream in(argv[i], std::ios::binary);
        if (!in) {
            fprintf(stderr, "fuzz_replay: cannot read %s\n", argv[i]);
            return 1;
        }
        std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
        files++;
    }

    const char *env = getenv("HC_FUZZ_REPLAY_RANDOM");
    const unsigned long random_inputs = env != nullptr ? strtoul(env, nullptr, 10) : 1000;
    std::mt19937_64 rng(20240601);
    size_t bytes_total = 0;
    for (unsigned long n = 0; n < random_inputs; n++) {
        std::vector<uint8_t> bytes(rng() % 1024);
        for (uint8_t &b : bytes) b = static_cast<uint8_t>(rng());
        bytes_total += bytes.size();
        LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    }
    printf("fuzz_replay: %zu corpus files and %lu random inputs (%zu bytes) passed\n", files,
           random_inputs, bytes_total);
    return 0;
}
