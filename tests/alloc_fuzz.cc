// tests/alloc_fuzz.cc — a fuzz target: any byte string is a program of
// allocator operations, checked against a shadow model.
//
// Each operation starts with an opcode byte, then its arguments:
//   malloc SIZE | free K | realloc K SIZE | aligned_alloc LOG2 SIZE |
//   calloc COUNT SIZE | thread flush | release to OS | fail the next N maps
// (K picks the K-th live object, modulo how many there are). The model
// keeps every live object's range and the seed of the pattern written into
// it, and checks after every operation's result that
//   - every pointer is aligned (16 from 16 bytes, 8 below; or as asked),
//   - no two live objects overlap (by their usable size on stage 3+),
//   - an object's contents are intact when it is freed or resized, and
//     realloc kept the old prefix; calloc's bytes are zero,
//   - a NULL comes only with errno ENOMEM (EINVAL for a bad alignment), and
//     only when the request was impossible or a mapping was refused.
// A stage without unsized free (hc_features) gets sized equivalents:
// realloc = malloc + copy + hc_free_sized, aligned_alloc = malloc.
//
// Built two ways: by tools/measure/fuzz.sh with clang -fsanitize=fuzzer,address
// (coverage-guided, ASan also sees common/track.h's poisoning), and by Bazel
// as alloc_fuzz_replay_test (fuzz_replay_main.cc), which replays the seed
// corpus and a fixed set of pseudo-random programs on every `bazel test`.
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <map>
#include <vector>

extern "C" {
#include "common/hcmalloc.h"
#include "common/os.h"
#include "common/size_class.h"
}

namespace {

enum Op : uint8_t {
    kMalloc,
    kFree,
    kRealloc,
    kAlignedAlloc,
    kCalloc,
    kThreadFlush,
    kRelease,
    kFailMaps,
    kNumOps,
};

constexpr size_t kMaxLive = 512;

[[noreturn]] void Fail(const char *what, const void *p, size_t size) {
    fprintf(stderr, "alloc_fuzz: %s: %p, %zu bytes (%s)\n", what, p, size, hc_stage_name());
    abort();
}

// Reads the input a byte at a time; past the end everything is 0.
class Input {
   public:
    Input(const uint8_t *data, size_t size) : data_(data), size_(size) {}
    bool done() const { return pos_ >= size_; }
    uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
    uint16_t Short() { return static_cast<uint16_t>(Byte() | Byte() << 8); }

    // Mostly small, every class reachable, sometimes large or impossible.
    size_t Size() {
        uint8_t kind = Byte();
        if (kind < 160) return Byte() % 257;                               // 0..256
        if (kind < 215) return Short() % 4097;                             // up to 4 KiB
        if (kind < 245) return sc_size(1 + Byte() % (HC_NUM_CLASSES - 1)) - Byte() % 16;
        if (kind < 250) return HC_MAX_SMALL_SIZE - 64 + Short() % (1u << 15);  // around the large boundary
        return SIZE_MAX - Short();                                          // impossible
    }

   private:
    const uint8_t *data_;
    size_t size_;
    size_t pos_ = 0;
};

struct Live {
    unsigned char *ptr;
    size_t size;
    uint64_t seed;
    bool unsized;  // from aligned_alloc or hc_realloc: freed with hc_free
};

// Byte i of an object seeded `seed`: byte i % 8 of word i / 8, so whole
// words can be written and compared at once.
uint64_t PatternWord(uint64_t seed, size_t word) { return seed ^ (word * 0xD6E8FEB86659FD93ull); }

uint8_t PatternByte(uint64_t seed, size_t i) {
    return static_cast<uint8_t>(PatternWord(seed, i / 8) >> (i % 8 * 8));
}

// Writes, or with `check` compares, bytes [from, to) of the pattern; returns
// the offset of the first byte that differs, or SIZE_MAX.
size_t Pattern(unsigned char *p, uint64_t seed, size_t from, size_t to, bool check) {
    size_t i = from;
    for (; i < to && i % 8 != 0; i++) {
        if (!check) p[i] = PatternByte(seed, i);
        else if (p[i] != PatternByte(seed, i)) return i;
    }
    for (; i + 8 <= to; i += 8) {
        uint64_t w = PatternWord(seed, i / 8), have;
        if (!check) {
            memcpy(p + i, &w, 8);
        } else {
            memcpy(&have, p + i, 8);
            if (have != w) return i;
        }
    }
    for (; i < to; i++) {
        if (!check) p[i] = PatternByte(seed, i);
        else if (p[i] != PatternByte(seed, i)) return i;
    }
    return SIZE_MAX;
}

// The offset of the first byte of [p, p + n) that is not zero, or SIZE_MAX.
// Word by word: under TSan every byte read is a call into its runtime, and
// calloc's blocks here run to megabytes.
size_t FirstNonZero(const unsigned char *p, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        if (w != 0) break;
    }
    for (; i < n; i++)
        if (p[i] != 0) return i;
    return SIZE_MAX;
}

class Model {
   public:
    Model() : unsized_(hc_features() & HC_FEATURE_UNSIZED_FREE) {}
    ~Model() {
        for (Live &o : live_) FreeLive(o);
        os_fail_next_maps(0);
    }

    void Run(Input &in) {
        while (!in.done()) {
            switch (in.Byte() % kNumOps) {
                case kMalloc: Malloc(in.Size()); break;
                case kFree: Free(in.Byte()); break;
                case kRealloc: {
                    uint8_t k = in.Byte();
                    Realloc(k, in.Size());
                    break;
                }
                case kAlignedAlloc: {
                    uint8_t log2 = in.Byte();
                    AlignedAlloc(log2, in.Size());
                    break;
                }
                case kCalloc: {
                    uint8_t count = in.Byte();
                    Calloc(count, in.Size());
                    break;
                }
                case kThreadFlush: hc_thread_flush(); break;
                case kRelease: hc_release_free_memory(); break;
                case kFailMaps: os_fail_next_maps(in.Byte() % 4); break;
            }
        }
    }

   private:
    // A NULL is allowed when the request cannot be met or a mapping was
    // refused during the call; either way errno says ENOMEM.
    void CheckNull(size_t size, unsigned long refused_before, int want_errno = ENOMEM) {
        if (errno != want_errno) Fail("NULL with the wrong errno", nullptr, size);
        bool impossible = size > ((size_t)1 << 46);
        if (!impossible && want_errno == ENOMEM && os_injected_failures() == refused_before)
            Fail("NULL though no mapping was refused", nullptr, size);
    }

    void CheckAlignment(const void *p, size_t size, size_t alignment) {
        size_t natural = size >= 16 ? 16 : 8;
        if (alignment < natural) alignment = natural;
        if (reinterpret_cast<uintptr_t>(p) % alignment != 0) Fail("misaligned", p, size);
    }

    // Usable extent: what the allocator says the object may use (stage 3+),
    // so an object that silently extends into another's memory shows too.
    size_t Extent(const Live &o) const {
        size_t n = unsized_ ? hc_usable_size(o.ptr) : o.size;
        if (n < o.size) Fail("hc_usable_size below the size asked for", o.ptr, o.size);
        return n > 0 ? n : 1;
    }

    void Insert(Live o) {
        size_t extent = Extent(o);
        uintptr_t start = reinterpret_cast<uintptr_t>(o.ptr);
        auto next = ranges_.lower_bound(start);
        if (next != ranges_.end() && next->first < start + extent) Fail("overlaps the next live object", o.ptr, o.size);
        if (next != ranges_.begin()) {
            auto prev = std::prev(next);
            if (prev->first + prev->second > start) Fail("overlaps the previous live object", o.ptr, o.size);
        }
        ranges_[start] = extent;
        Pattern(o.ptr, o.seed, 0, o.size, false);
        live_.push_back(o);
    }

    void Verify(const Live &o, size_t bytes) const {
        size_t bad = Pattern(o.ptr, o.seed, 0, bytes, true);
        if (bad != SIZE_MAX) Fail("contents changed", o.ptr + bad, o.size);
    }

    // Takes the k-th live object out of the model (contents verified).
    Live Take(uint8_t k) {
        size_t i = k % live_.size();
        Live o = live_[i];
        live_[i] = live_.back();
        live_.pop_back();
        Verify(o, o.size);
        ranges_.erase(reinterpret_cast<uintptr_t>(o.ptr));
        return o;
    }

    void FreeLive(const Live &o) {
        if (unsized_ && (o.unsized || o.size % 2)) hc_free(o.ptr);  // both frees, when the stage has both
        else hc_free_sized(o.ptr, o.size);
    }

    void Malloc(size_t size) {
        if (live_.size() >= kMaxLive) return Free(0);
        unsigned long refused = os_injected_failures();
        errno = 0;
        void *p = hc_malloc(size);
        if (p == nullptr) return CheckNull(size, refused);
        CheckAlignment(p, size, 1);
        Insert({static_cast<unsigned char *>(p), size, next_seed_++, false});
    }

    void Free(uint8_t k) {
        if (live_.empty()) return;
        FreeLive(Take(k));
    }

    void Realloc(uint8_t k, size_t size) {
        if (live_.empty()) return Malloc(size);
        Live old = Take(k);
        unsigned long refused = os_injected_failures();
        errno = 0;
        void *p;
        if (unsized_) {
            p = hc_realloc(old.ptr, size);
            if (size == 0) {  // frees the block, returns NULL (hcmalloc.h)
                if (p != nullptr) Fail("hc_realloc(p, 0) returned a block", p, 0);
                return;
            }
        } else if (old.unsized) {
            Fail("an unsized object on a stage without unsized free", old.ptr, old.size);
        } else {
            p = hc_malloc(size);
            if (p != nullptr) {
                memcpy(p, old.ptr, old.size < size ? old.size : size);
                hc_free_sized(old.ptr, old.size);
            }
        }
        if (p == nullptr) {
            CheckNull(size, refused);
            Insert(old);  // kept whole: re-inserting rewrites the same pattern
            return;
        }
        CheckAlignment(p, size, 1);
        Live moved = {static_cast<unsigned char *>(p), size, old.seed, unsized_};
        Verify(moved, old.size < size ? old.size : size);
        Insert(moved);
    }

    void AlignedAlloc(uint8_t log2, size_t size) {
        if (live_.size() >= kMaxLive) return Free(0);
        // Mostly powers of two up to 2 MiB; sometimes not a power of two.
        size_t alignment = (log2 & 0x80) ? (size_t)(log2 & 0x7f) * 3 : (size_t)1 << (log2 % 22);
        bool valid = alignment != 0 && (alignment & (alignment - 1)) == 0;
        unsigned long refused = os_injected_failures();
        errno = 0;
        void *p;
        if (unsized_ || !valid) {
            p = hc_aligned_alloc(alignment, size);
        } else {
            p = hc_malloc(size);  // the sized stand-in: natural alignment only
            alignment = 1;
        }
        if (!valid) {
            if (p != nullptr) Fail("aligned_alloc accepted a non-power-of-two alignment", p, alignment);
            return CheckNull(size, refused, EINVAL);
        }
        if (p == nullptr) return CheckNull(size, refused);
        CheckAlignment(p, size, alignment);
        Insert({static_cast<unsigned char *>(p), size, next_seed_++, unsized_});
    }

    void Calloc(uint8_t count, size_t size) {
        if (live_.size() >= kMaxLive) return Free(0);
        // A count of 255 with a big size: the product wraps.
        size_t n = count == 255 ? (SIZE_MAX / 2 + 2) : count % 8;
        unsigned long refused = os_injected_failures();
        errno = 0;
        unsigned char *p = static_cast<unsigned char *>(hc_calloc(n, size));
        size_t bytes;
        bool overflow = __builtin_mul_overflow(n, size, &bytes);
        if (p == nullptr) return CheckNull(overflow ? SIZE_MAX : bytes, refused);
        if (overflow) Fail("calloc whose product wraps returned a block", p, size);
        CheckAlignment(p, bytes, 1);
        size_t nonzero = FirstNonZero(p, bytes);
        if (nonzero != SIZE_MAX) Fail("calloc byte not zero", p + nonzero, bytes);
        Insert({p, bytes, next_seed_++, false});
    }

    const bool unsized_;
    std::vector<Live> live_;
    std::map<uintptr_t, size_t> ranges_;  // start -> extent of every live object
    uint64_t next_seed_ = 0x9E3779B97F4A7C15ull;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Input in(data, size);
    Model model;
    model.Run(in);
    return 0;
}
