// tools/install/install_check.cc — a C++ program built against the installed
// package alone (<hcmalloc.h>, pkg-config), for tools/install/install_test.sh:
// operator new is hcmalloc's, and its failure throws std::bad_alloc.
#include <malloc.h>

#include <cstdint>
#include <cstdio>
#include <new>
#include <string>
#include <vector>

#include <hcmalloc.h>

static volatile std::size_t huge = SIZE_MAX - 4096;

int main() {
    std::size_t before = 0, after = 0;
    hc_get_property("generic.current_allocated_bytes", &before);
    char *big = new char[1 << 20];
    hc_get_property("generic.current_allocated_bytes", &after);
    char *p = new char[33];
    std::size_t usable = malloc_usable_size(p);
    delete[] p;
    delete[] big;
    bool threw = false;
    try {
        ::operator delete(::operator new(huge));
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    std::vector<std::string> strings(1000, std::string(100, 'x'));
    bool ok = usable == 48 && after >= before + (1 << 20) && threw && strings.back().size() == 100;
    std::printf("install_check.cc: %s: usable(new char[33]) = %zu, in use %zu -> %zu after new char[1 MiB], "
                "new(huge) %s std::bad_alloc\n",
                ok ? "PASS" : "FAIL", usable, before, after, threw ? "threw" : "did not throw");
    return ok ? 0 : 1;
}
