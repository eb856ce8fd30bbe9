// stage4_reclaim/checks/link_check.cc — a C++ program linked with -lhcmalloc
// (static or shared, link_test.sh): operator new and delete must be
// hcmalloc's, with no LD_PRELOAD.
#include <malloc.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/hcmalloc.h"

int main() {
    size_t before = 0, after = 0;
    hc_get_property("generic.current_allocated_bytes", &before);
    std::unique_ptr<char[]> big(new char[1 << 20]);
    std::memset(big.get(), 1, 1 << 20);
    hc_get_property("generic.current_allocated_bytes", &after);
    char *p = new char[33];
    size_t usable = malloc_usable_size(p); // 48 under hcmalloc
    delete[] p;
    std::vector<std::string> strings(1000, std::string(100, 'x')); // the library's own new
    bool ok = usable == 48 && after >= before + (1 << 20) && strings.back().size() == 100;
    std::printf("link_check.cc: %s: usable(new char[33]) = %zu, in use %zu -> %zu after new char[1 MiB]\n",
                ok ? "PASS" : "FAIL", usable, before, after);
    return ok ? 0 : 1;
}
