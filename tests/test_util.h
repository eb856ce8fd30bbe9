// tests/test_util.h — helpers the shared suite uses on every stage.
#ifndef HC_TESTS_TEST_UTIL_H_
#define HC_TESTS_TEST_UTIL_H_

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <string>

#include "common/hcmalloc.h"

namespace hc_test {

// A word derived from an object's address and size: two live objects that
// overlap, or one handed out twice, end up with the other's pattern.
inline uint64_t PatternSeed(const void *p, size_t size) {
    uint64_t x = reinterpret_cast<uintptr_t>(p) * 0x9E3779B97F4A7C15ull ^ size;
    return x ^ (x >> 29);
}

inline void FillPattern(void *p, size_t size) {
    uint64_t seed = PatternSeed(p, size);
    unsigned char *bytes = static_cast<unsigned char *>(p);
    size_t words = size / 8;
    for (size_t i = 0; i < words; i++) {
        uint64_t w = seed + i;
        memcpy(bytes + i * 8, &w, 8);
    }
    for (size_t i = words * 8; i < size; i++) bytes[i] = static_cast<unsigned char>(seed >> (i % 8));
}

// Returns the offset of the first byte that differs, or SIZE_MAX if intact.
inline size_t FindPatternMismatch(const void *p, size_t size) {
    uint64_t seed = PatternSeed(p, size);
    const unsigned char *bytes = static_cast<const unsigned char *>(p);
    size_t words = size / 8;
    for (size_t i = 0; i < words; i++) {
        uint64_t w;
        memcpy(&w, bytes + i * 8, 8);
        if (w != seed + i) return i * 8;
    }
    for (size_t i = words * 8; i < size; i++)
        if (bytes[i] != static_cast<unsigned char>(seed >> (i % 8))) return i;
    return SIZE_MAX;
}

inline bool HasFeature(unsigned bit) { return (hc_features() & bit) != 0; }

// The reason a test skips on a stage without `bit`, from hc_features().
inline std::string MissingFeature(const char *what) {
    return std::string(hc_stage_name()) + " lacks " + what + " (hc_features() = " +
           std::to_string(hc_features()) + ")";
}

inline size_t EnvSize(const char *name, size_t fallback) {
    const char *v = getenv(name);
    if (v == nullptr || *v == '\0') return fallback;
    char *end;
    unsigned long long n = strtoull(v, &end, 10);
    return *end == '\0' ? static_cast<size_t>(n) : fallback;
}

}  // namespace hc_test

#endif  // HC_TESTS_TEST_UTIL_H_
