// stage4_reclaim/dropin_new.cc — the drop-in library's C++ half: every
// replaceable operator new and delete, on top of the hc_* API.
//
// Layer: above the public API; touches nothing but hc_*. libstdc++'s own
// operator new would reach our malloc anyway; replacing it saves a call.
#include <cstddef>
#include <new>

extern "C" {
#include "common/compiler.h"
#include "common/harden.h"
#include "common/hcmalloc.h"
}

namespace {

// The standard's loop: on failure call the installed new_handler and try
// again; with no handler, fail. `nothrow` turns the failure (and a
// handler's std::bad_alloc) into nullptr.
template <bool kNothrow>
void *allocate(std::size_t size, std::size_t alignment) {
    for (;;) {
        void *p = alignment == 0 ? hc_malloc(size) : hc_aligned_alloc(alignment, size);
        if (HC_LIKELY(p != nullptr))
            return p;
        std::new_handler handler = std::get_new_handler();
        if (handler == nullptr) {
            if (kNothrow)
                return nullptr;
            throw std::bad_alloc();
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
HC_NEW_EXPORT void operator delete(void *p, std::size_t n) noexcept { harden_sized_delete(p, n); }
HC_NEW_EXPORT void operator delete[](void *p, std::size_t n) noexcept { harden_sized_delete(p, n); }
#else
HC_NEW_EXPORT void operator delete(void *p, std::size_t) noexcept { hc_free(p); }
HC_NEW_EXPORT void operator delete[](void *p, std::size_t) noexcept { hc_free(p); }
#endif

// Aligned delete, sized or not: by address, because an aligned block may
// sit in a larger class than its size names (hc_aligned_alloc).
HC_NEW_EXPORT void operator delete(void *p, std::align_val_t) noexcept { hc_free(p); }
HC_NEW_EXPORT void operator delete[](void *p, std::align_val_t) noexcept { hc_free(p); }
HC_NEW_EXPORT void operator delete(void *p, std::align_val_t, const std::nothrow_t &) noexcept { hc_free(p); }
HC_NEW_EXPORT void operator delete[](void *p, std::align_val_t, const std::nothrow_t &) noexcept { hc_free(p); }
HC_NEW_EXPORT void operator delete(void *p, std::size_t, std::align_val_t) noexcept { hc_free(p); }
HC_NEW_EXPORT void operator delete[](void *p, std::size_t, std::align_val_t) noexcept { hc_free(p); }
