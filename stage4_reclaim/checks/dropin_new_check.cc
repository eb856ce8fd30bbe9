// stage4_reclaim/checks/dropin_new_check.cc — operator new/delete in every form,
// through whatever allocator the process runs on; :dropin_api_test runs it
// under LD_PRELOAD=libhcmalloc.so. Checks that the operators resolve into
// libhcmalloc.so, that aligned new is aligned, and the failure contract:
// std::bad_alloc, the new_handler loop, nullptr from nothrow.
#include <dlfcn.h>
#include <malloc.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

static int failures;

#define CHECK(cond, what)                                                        \
    do {                                                                         \
        if (!(cond)) {                                                           \
            std::fprintf(stderr, "FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #cond, what); \
            failures++;                                                          \
        }                                                                        \
    } while (0)

// Where a function's code lives, as the dynamic linker resolved it.
static bool defined_in_hcmalloc(void *fn) {
    Dl_info info;
    return dladdr(fn, &info) != 0 && info.dli_fname != nullptr &&
           std::strstr(info.dli_fname, "libhcmalloc.so") != nullptr;
}

// Too big for any allocator, but not so big the compiler rejects the expression.
static volatile std::size_t huge = SIZE_MAX - 4096;

static int handler_calls;
static int throwing_handler_calls;
static void handler_throws() {
    throwing_handler_calls++;
    throw std::bad_alloc();
}
static void handler_gives_up() {
    handler_calls++;
    if (handler_calls == 3)
        std::set_new_handler(nullptr);  // the next failure throws
}

struct alignas(64) Line {
    char bytes[64];
};
struct alignas(4096) Page {
    char bytes[4096];
};

int main() {
    void *(*plain_new)(std::size_t) = &::operator new;
    void (*plain_delete)(void *) noexcept = &::operator delete;
    void (*sized_delete)(void *, std::size_t) noexcept = &::operator delete;
    void *(*aligned_new)(std::size_t, std::align_val_t) = &::operator new;
    CHECK(defined_in_hcmalloc(reinterpret_cast<void *>(plain_new)), "operator new is not hcmalloc's");
    CHECK(defined_in_hcmalloc(reinterpret_cast<void *>(plain_delete)), "operator delete is not hcmalloc's");
    CHECK(defined_in_hcmalloc(reinterpret_cast<void *>(sized_delete)), "sized delete is not hcmalloc's");
    CHECK(defined_in_hcmalloc(reinterpret_cast<void *>(aligned_new)), "aligned new is not hcmalloc's");
    void *p33 = ::operator new(33);
    CHECK(malloc_usable_size(p33) == 48, "operator new(33) is not an hcmalloc block of class 48");
    ::operator delete(p33, 33);

    // Every form, allocated and freed by its partner.
    for (std::size_t size : {std::size_t{0}, std::size_t{1}, std::size_t{100}, std::size_t{5000},
                             std::size_t{300 << 10}}) {
        void *a = ::operator new(size);
        void *b = ::operator new[](size);
        void *c = ::operator new(size, std::nothrow);
        void *d = ::operator new[](size, std::nothrow);
        CHECK(a && b && c && d, "new returned nullptr");
        std::memset(a, 1, size);
        std::memset(b, 1, size);
        ::operator delete(a, size);
        ::operator delete[](b, size);
        ::operator delete(c, std::nothrow);
        ::operator delete[](d);
    }
    for (std::size_t align = 1; align <= (1u << 20); align *= 2) {
        std::align_val_t al{align};
        void *a = ::operator new(100, al);
        void *b = ::operator new[](align, al);
        void *c = ::operator new(7, al, std::nothrow);
        void *d = ::operator new[](3 * align, al, std::nothrow);
        for (void *p : {a, b, c, d})
            CHECK(p != nullptr && reinterpret_cast<std::uintptr_t>(p) % align == 0, "aligned new");
        ::operator delete(a, 100, al);
        ::operator delete[](b, al);
        ::operator delete(c, al, std::nothrow);
        ::operator delete[](d, 3 * align, al);
    }
    auto *lines = new Line[10];
    auto *page = new Page;
    CHECK(reinterpret_cast<std::uintptr_t>(lines) % 64 == 0, "new Line[]");
    CHECK(reinterpret_cast<std::uintptr_t>(page) % 4096 == 0, "new Page");
    delete[] lines;
    delete page;

    // Failure: bad_alloc, nullptr for nothrow, the handler loop.
    bool threw = false;
    try {
        void *p = ::operator new(huge);
        ::operator delete(p);
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    CHECK(threw, "new(huge) did not throw std::bad_alloc");
    CHECK(::operator new(huge, std::nothrow) == nullptr, "nothrow new(huge)");
    CHECK(::operator new(huge, std::align_val_t{64}, std::nothrow) == nullptr, "nothrow aligned new(huge)");
    std::set_new_handler(handler_gives_up);
    threw = false;
    try {
        void *p = ::operator new[](huge);
        ::operator delete[](p);
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    CHECK(threw && handler_calls == 3, "the new_handler was not called until it gave up");
    // A handler's std::bad_alloc, caught inside nothrow new: the library
    // catches through libstdc++'s ABI, bound weakly (dropin_new.cc).
    std::set_new_handler(handler_throws);
    CHECK(::operator new(huge, std::nothrow) == nullptr && throwing_handler_calls == 1,
          "nothrow new did not turn its handler's std::bad_alloc into nullptr");
    CHECK(::operator new[](huge, std::align_val_t{64}, std::nothrow) == nullptr && throwing_handler_calls == 2,
          "nothrow aligned new[] did not turn its handler's std::bad_alloc into nullptr");
    std::set_new_handler(nullptr);

    // The standard library on top, from several threads.
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; t++)
        threads.emplace_back([t] {
            std::map<int, std::string> m;
            for (int i = 0; i < 20000; i++)
                m[i] = std::string(static_cast<std::size_t>(i % 200), static_cast<char>('a' + t));
            std::vector<std::unique_ptr<int[]>> v;
            for (int i = 0; i < 1000; i++)
                v.emplace_back(new int[i + 1]);
        });
    for (auto &th : threads)
        th.join();

    if (failures != 0) {
        std::fprintf(stderr, "dropin_new_check: %d failures\n", failures);
        return 1;
    }
    std::printf("dropin_new_check: PASS (operator new/delete through libhcmalloc.so)\n");
    return 0;
}
