// stage4_reclaim/dropin_new.cc — the drop-in library's C++ half: every
// replaceable operator new and delete, on top of the hc_* API.
//
// Layer: above the public API; touches nothing but hc_* and, weakly,
// libstdc++. libstdc++'s own operator new would reach our malloc anyway;
// replacing it saves a call.
//
// The library needs no libstdc++ of its own: a C program that preloads it
// loads libc alone (loading libstdc++, libm and libgcc_s cost every process
// start about 0.8 ms). What operator new needs from libstdc++ (the
// new-handler, std::bad_alloc, the C++ ABI's catch) is referenced weakly,
// below: the loader binds it when the process already has libstdc++, which
// every C++ program does, and leaves it null otherwise. Null is the
// fallback: no new-handler can have been installed (std::set_new_handler
// lives in libstdc++), and a failure that must throw with nothing to throw
// it prints one line and aborts, as a build without exceptions does. That
// happens only to code that calls operator new from outside the process's
// global scope of libraries (a C++ module dlopen'd with its own libstdc++
// into a C program): docs/dropin.md, section 6, "Cost at start-up".
#include <cstddef>
#include <new>

extern "C" {
#include "common/compiler.h"
#include "common/fatal.h"
#include "common/harden.h"
#include "common/hcmalloc.h"
}

// libstdc++'s std::get_new_handler() and std::__throw_bad_alloc(), by their
// mangled names, weak: null unless the process brought libstdc++.
extern "C" {
std::new_handler libstdcxx_get_new_handler() noexcept __asm__("_ZSt15get_new_handlerv")
    __attribute__((weak));
[[noreturn]] void libstdcxx_throw_bad_alloc() __asm__("_ZSt17__throw_bad_allocv")
    __attribute__((weak));
}
// What the compiler emits for the catch below (the personality routine, the
// catch's begin and end, std::bad_alloc's type, the unwinder's resume and
// std::terminate): weak too, so that they neither make libstdc++ needed nor
// fail to bind without it. They run only when an exception unwinds through
// this file, and without libstdc++ none can be thrown.
__asm__(".weak __gxx_personality_v0\n"
        ".weak __cxa_begin_catch\n"
        ".weak __cxa_end_catch\n"
        ".weak __cxa_call_terminate\n"
        ".weak _ZTISt9bad_alloc\n"
        ".weak _ZSt9terminatev\n"
        ".weak _Unwind_Resume\n");

namespace {

std::new_handler installed_new_handler() {
    return libstdcxx_get_new_handler != nullptr ? libstdcxx_get_new_handler() : nullptr;
}

[[noreturn]] HC_NOINLINE void throw_bad_alloc() {
    if (libstdcxx_throw_bad_alloc != nullptr)
        libstdcxx_throw_bad_alloc();
    hc_fatal("operator new: out of memory, and no libstdc++ in the process to throw std::bad_alloc");
}

// The standard's loop: on failure call the installed new_handler and try
// again; with no handler, fail. `nothrow` turns the failure (and a
// handler's std::bad_alloc) into nullptr.
template <bool kNothrow>
void *allocate(std::size_t size, std::size_t alignment) {
    for (;;) {
        void *p = alignment == 0 ? hc_malloc(size) : hc_aligned_alloc(alignment, size);
        if (HC_LIKELY(p != nullptr))
            return p;
        std::new_handler handler = installed_new_handler();
        if (handler == nullptr) {
            if (kNothrow)
                return nullptr;
            throw_bad_alloc();
        }
        if (kNothrow) {
            try {
                handler();
            } catch (const std::bad_alloc &) {
                return nullptr;
            }
        } else {
            handler();
        }
    }
}

// new with no alignment argument: the hot one, hc_malloc inline.
inline void *allocate_plain(std::size_t size) {
    void *p = hc_malloc(size);
    return HC_LIKELY(p != nullptr) ? p : allocate<false>(size, 0);
}

}  // namespace

#define HC_NEW_EXPORT __attribute__((visibility("default")))

HC_NEW_EXPORT void *operator new(std::size_t size) { return allocate_plain(size); }
HC_NEW_EXPORT void *operator new[](std::size_t size) { return allocate_plain(size); }
HC_NEW_EXPORT void *operator new(std::size_t size, const std::nothrow_t &) noexcept {
    return allocate<true>(size, 0);
}
HC_NEW_EXPORT void *operator new[](std::size_t size, const std::nothrow_t &) noexcept {
    return allocate<true>(size, 0);
}
HC_NEW_EXPORT void *operator new(std::size_t size, std::align_val_t al) {
    return allocate<false>(size, static_cast<std::size_t>(al));
}
HC_NEW_EXPORT void *operator new[](std::size_t size, std::align_val_t al) {
    return allocate<false>(size, static_cast<std::size_t>(al));
}
HC_NEW_EXPORT void *operator new(std::size_t size, std::align_val_t al, const std::nothrow_t &) noexcept {
    return allocate<true>(size, static_cast<std::size_t>(al));
}
HC_NEW_EXPORT void *operator new[](std::size_t size, std::align_val_t al, const std::nothrow_t &) noexcept {
    return allocate<true>(size, static_cast<std::size_t>(al));
}

// Plain and nothrow delete: by address.
HC_NEW_EXPORT void operator delete(void *p) noexcept { hc_free(p); }
HC_NEW_EXPORT void operator delete[](void *p) noexcept { hc_free(p); }
HC_NEW_EXPORT void operator delete(void *p, const std::nothrow_t &) noexcept { hc_free(p); }
HC_NEW_EXPORT void operator delete[](void *p, const std::nothrow_t &) noexcept { hc_free(p); }

// Sized delete: by address too. hc_free_sized would skip the page map
// (docs/stage3.md, section 8, counts both), but it trusts its caller; hc_free's tag is what stops
// a double delete at the call (common/harden.h), as it stops a double free.
// The hardened library checks the size against the block (common/harden.h).
#if HC_HARDENED
static constexpr const char *kWrongSize = "delete(): wrong size for the block at";
HC_NEW_EXPORT void operator delete(void *p, std::size_t n) noexcept { harden_sized_free(p, n, kWrongSize); }
HC_NEW_EXPORT void operator delete[](void *p, std::size_t n) noexcept { harden_sized_free(p, n, kWrongSize); }
#else
HC_NEW_EXPORT void operator delete(void *p, std::size_t) noexcept { hc_free(p); }
HC_NEW_EXPORT void operator delete[](void *p, std::size_t) noexcept { hc_free(p); }
#endif

// Aligned delete, sized or not: by address, because an aligned block may
// sit in a larger class than its size names (hc_aligned_alloc). The
// hardened library first checks that a sized one's size and alignment name
// the class the block is in (common/harden.h).
HC_NEW_EXPORT void operator delete(void *p, std::align_val_t) noexcept { hc_free(p); }
HC_NEW_EXPORT void operator delete[](void *p, std::align_val_t) noexcept { hc_free(p); }
HC_NEW_EXPORT void operator delete(void *p, std::align_val_t, const std::nothrow_t &) noexcept { hc_free(p); }
HC_NEW_EXPORT void operator delete[](void *p, std::align_val_t, const std::nothrow_t &) noexcept { hc_free(p); }
#if HC_HARDENED
HC_NEW_EXPORT void operator delete(void *p, std::size_t n, std::align_val_t a) noexcept {
    harden_aligned_sized_free(p, static_cast<std::size_t>(a), n, kWrongSize);
}
HC_NEW_EXPORT void operator delete[](void *p, std::size_t n, std::align_val_t a) noexcept {
    harden_aligned_sized_free(p, static_cast<std::size_t>(a), n, kWrongSize);
}
#else
HC_NEW_EXPORT void operator delete(void *p, std::size_t, std::align_val_t) noexcept { hc_free(p); }
HC_NEW_EXPORT void operator delete[](void *p, std::size_t, std::align_val_t) noexcept { hc_free(p); }
#endif
