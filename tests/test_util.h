// tests/test_util.h — helpers the shared suite uses on every stage.
#ifndef HC_TESTS_TEST_UTIL_H_
#define HC_TESTS_TEST_UTIL_H_

#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

// What write_fn(fd) writes (hc_dump_heap_svg, hc_trace_write), read back
// from a file `name` left in the test's undeclared outputs (to look at) when
// Bazel gives it some. Empty if the file cannot be made or write_fn fails.
inline std::string CaptureFd(int (*write_fn)(int fd), const std::string &name) {
    const char *dir = getenv("TEST_UNDECLARED_OUTPUTS_DIR");
    if (dir == nullptr) dir = getenv("TEST_TMPDIR");
    std::string path = std::string(dir ? dir : "/tmp") + "/" + name;
    int fd = open(path.c_str(), O_CREAT | O_TRUNC | O_RDWR, 0644);
    if (fd < 0) return "";
    std::string text;
    if (write_fn(fd) == 0 && lseek(fd, 0, SEEK_SET) == 0) {
        char buf[8192];
        for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) text.append(buf, (size_t)n);
    }
    close(fd);
    return text;
}

}  // namespace hc_test

#endif  // HC_TESTS_TEST_UTIL_H_
