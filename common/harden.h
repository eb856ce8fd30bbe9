/* common/harden.h — the hardened build (HC_HARDENED=1, `--config=hardened`,
 * libhcmalloc_hardened.so): what it adds, in one place.
 *
 * Heap exploits turn a mistake (a write after free, an overflow into a free
 * neighbour, a double free) into "malloc returns the address I chose": they
 * forge the link word of a free object. The hardened build makes that link,
 * and the free state itself, something the program cannot fake:
 *
 *   - every free-list link is stored encoded, word0 = next ^ t with
 *     t = key ^ slot (a per-process random key and the slot's own address:
 *     glibc's safe-linking idea, with a secret instead of ASLR alone). A
 *     forged word decodes to garbage, which the check below rejects before
 *     the allocator follows it or hands it out;
 *   - every decoded link is checked: a user-space address (bits 47..63
 *     zero) aligned to 16. The key's top bits are never all zero, so an
 *     attacker's raw address, or a zeroed link, always fails; a random
 *     guess passes once in 2^21. Lists cut, merged or fetched on slow paths
 *     are also checked against the page map (the object lies in a small
 *     span of the list's class: central_cache.c);
 *   - a free object carries a tag in its second word (word1 = t), which
 *     every hand-out overwrites: free of an object whose tag is set is a double free,
 *     confirmed in O(1) by its link decoding to a valid pointer, and stops
 *     at the call (glibc's tcache key, without its list walk). A slot never
 *     handed out is tagged from the moment it is carved, so its free stops
 *     too;
 *   - an 8-byte block (a request of 1..8 bytes: the 16-byte class, which
 *     serves no more in this build) carries a canary in its second word,
 *     random and with no zero byte, written at every hand-out (which also
 *     clears the link word: a live block holds no encoded link) and
 *     checked when the block comes back (harden_canary_intact): a write
 *     past its 8 bytes stops the program at that free or realloc;
 *   - malloc(0) returns a unique address in memory mapped with no access,
 *     so reading or writing the zero bytes it owns faults; free and
 *     realloc know these addresses (harden_is_zero_size);
 *   - a freed block is not handed straight back: free links it behind its
 *     list's head (harden_link_behind), so the next malloc of the class
 *     returns another block;
 *   - C++ sized delete and C23 free_sized check their size against the
 *     block's class (harden_sized_free; aligned ones, harden_aligned_sized_free);
 *     malloc_usable_size of a freed block stops (harden_block_is_free);
 *   - a block of HARDEN_GUARD_MIN_SIZE bytes or more is a guarded block:
 *     a mapping of its own between no-access pages, no-access once freed
 *     and kept so for a while (common/harden_guard.h).
 *
 * The default build keeps one of these ideas, cheap enough for every free:
 * free's tag. hc_free (stage 3) writes free_tag_value(block) into its second
 * word, and every hand-out clears that word (free_tag_clear), so a block
 * that reaches hc_free with the tag still set is free already: a double
 * free, caught at the call whatever was freed in between (a;b;a) and
 * whichever thread freed it first. Four instructions on free, one on
 * malloc. For the second word to exist, no class is smaller than 16 bytes
 * (size_class.h), in either build.
 *
 * Every layer calls the functions below and nothing else; in the default
 * build all but the tag compile to the plain link and nothing, so the
 * sized fast path is unchanged (tools/measure/count_fastpath.sh). Cost in each
 * build: see docs/design.md, section 6.
 * May touch: the first two words of free objects, and of objects handed
 * out (the cleared link, the canary); the key and the canary (harden.c). */
#ifndef HC_HARDEN_H_
#define HC_HARDEN_H_

#include <stddef.h>
#include <stdint.h>

#include "common/compiler.h"
#include "common/track.h"

#ifndef HC_HARDENED
#define HC_HARDENED 0
#endif

/* Prints "hcmalloc: <what> 0x<slot> (<why>)" and aborts (fatal.c); the
 * same declaration as fatal.h's, repeated so this header stands alone. */
__attribute__((noreturn, cold)) void hc_fatal_pointer_why(const char *what, const void *addr,
                                                          const char *why);

/* Bytes of a free object the allocator writes: the link and the tag. */
#define FREE_LINK_AND_TAG_BYTES (2 * sizeof(void *))

/* The 16-byte class. In the hardened build it serves requests of 1..8
 * bytes (size_class.h, SC_CANARY_CLASS_MAX_REQUEST) and its second word is
 * the canary: below. */
#define HARDEN_CANARY_CLASS 2

#if HC_HARDENED

/* What every hand-out writes over a block's first two words: 0 over the
 * link, so that a live block holds no encoded link (whose next address a
 * program can learn, and with it the key), and the canary over the tag.
 * [0] stays 0; harden_init sets [1], random, with no zero byte (a one-byte
 * overflow of 0, a string's terminator, changes it), before the first
 * hand-out. 16-byte aligned: one vector load takes both words. */
extern uintptr_t hc_harden_hand_out_words[2] __attribute__((visibility("hidden"), aligned(16)));

/* The program gets `slot`: it is no longer free. Every hand-out calls it
 * (fl_pop, and the slow paths where a refill skips fl_pop): one 16-byte
 * store, as many instructions as clearing the tag alone took, plus the
 * load. Every class's blocks are 16-byte aligned (size_class.h). */
HC_INLINE void free_tag_clear(void *slot) {
    typedef uintptr_t two_words __attribute__((vector_size(16)));
    typedef uintptr_t two_words_at __attribute__((vector_size(16), aligned(8), may_alias));
    *(two_words_at *)slot = *(const two_words *)hc_harden_hand_out_words;
}

/* The canary of a 16-byte block (HARDEN_CANARY_CLASS): its second word,
 * the 8 bytes right after the 8 the program may use, written at hand-out
 * and checked when the block comes back (stage 3's hc_free and
 * hc_free_sized, and hc_realloc when the block stays). A write one byte or
 * more past an 8-byte block changes it: the program stops at that free
 * with harden_overflow's message, before the block is reused. Blocks of
 * the other classes carry none (their last word would need the class size
 * on free's fast path: docs/design.md, section 6). */
HC_INLINE int harden_canary_intact(void *slot) {
    uintptr_t *canary = (uintptr_t *)slot + 1; /* past the program's bytes: a checker is told */
    track_internal_begin(canary, sizeof *canary);
    int intact = *canary == hc_harden_hand_out_words[1];
    track_internal_end(canary, sizeof *canary);
    return intact;
}

/* The canary harden_init makes of a random word: its zero bytes set (to
 * 0xa5), so that a one-byte overflow of any value, 0 included, changes it. */
uintptr_t harden_canary_of(uintptr_t random_word);

/* The canary was found overwritten: the program stops. The _last form is
 * for a caller that calls it last (not noreturn, so the call is a jump). */
__attribute__((noreturn, cold)) void harden_overflow(const void *slot);
__attribute__((cold)) void harden_overflow_last(const void *slot);

/* malloc(0): a unique address that faults when touched; NULL (errno
 * ENOMEM) if no address space is left for one. */
void *harden_zero_size_alloc(void);

/* Whether `p` came from harden_zero_size_alloc (free: nothing to do). */
int harden_is_zero_size(const void *p);

/* The hardened build's locks (malloc(0)'s, the guarded blocks') across
 * fork(): stage 4's fork handlers take them after every allocator lock,
 * and leave one that a signal-handler fork's own thread held to it
 * (harden_leaf_fork_lock, common/harden_guard.h). in_child: 1 in the
 * child's handler, 0 in the parent's. */
void harden_fork_lock(void);
void harden_fork_unlock(int in_child);

/* A decoded link with any of these bits set is not one the allocator wrote. */
#define HARDEN_BAD_LINK_BITS (~(((uintptr_t)1 << 47) - 1) | (uintptr_t)15)

/* The same mask in memory (harden.c), for the fast paths' link checks: x86
 * tests a register against memory in one instruction, where the constant
 * takes two (a 64-bit `movabs` into a register, then the test). Hidden, as
 * the key is: no GOT load. */
extern const uintptr_t hc_harden_bad_link_bits __attribute__((visibility("hidden")));

/* Whether `next` has a bad bit. On x86 an explicit `test` against the mask
 * in memory: gcc would copy `next` and `and` it, one instruction more where
 * `next` is still needed (fl_pop's new head). */
HC_INLINE int harden_link_is_bad(uintptr_t next) {
#if defined(__x86_64__)
    unsigned char bad;
    __asm__("testq %2, %1" : "=@ccnz"(bad) : "r"(next), "m"(hc_harden_bad_link_bits));
    return bad;
#else
    return (next & hc_harden_bad_link_bits) != 0;
#endif
}

/* Random, set once before the first link is written (harden_init), then
 * only read. Hidden on the declaration too: in the drop-in (-fPIC) a plain
 * extern is reached through the GOT, one load more on every malloc and free. */
extern uintptr_t hc_harden_key __attribute__((visibility("hidden")));

/* Sets the key if it is not set yet. Every malloc slow path calls it, and
 * a link is first written on one (carving a span or a chunk). */
void harden_init(void);

/* The slot's own secret: encodes its link, and is its "free" tag. A plain
 * load: the key is written once, before this thread's first link, by
 * harden_init on this thread's first slow path (an acquire load there, or
 * the store itself, orders it). */
HC_INLINE uintptr_t harden_slot_key(const void *slot) { return hc_harden_key ^ (uintptr_t)slot; }

/* Cold ends, which never return: so the fast path that may reach them
 * saves no register and keeps no frame for them. */
__attribute__((noreturn, cold)) void harden_corrupt_link(const void *slot);
__attribute__((noreturn, cold)) void harden_free_of_free(const void *slot);

HC_INLINE void *harden_decode(const void *slot, uintptr_t stored, uintptr_t t) {
    uintptr_t next = stored ^ t;
    if (HC_UNLIKELY(harden_link_is_bad(next)))
        harden_corrupt_link(slot);
    return (void *)next;
}

/* A link written: the object is free from now on. */
HC_INLINE void harden_store(void *slot, void *next, uintptr_t t) {
    ((uintptr_t *)slot)[0] = (uintptr_t)next ^ t;
    ((uintptr_t *)slot)[1] = t;
}

/* Whether small object `slot` (its key t) is free: its tag says so.
 * Program data equal to key ^ slot is a 2^-64 chance; a free object's link
 * also decodes to a valid pointer, which confirms it (in O(1): no list is
 * walked). */
HC_INLINE int harden_tagged_free(const void *slot, uintptr_t t) {
    const uintptr_t *word = (const uintptr_t *)slot;
    return HC_UNLIKELY(word[1] == t) && ((word[0] ^ t) & HARDEN_BAD_LINK_BITS) == 0;
}

/* Free of `slot`: a free one is a double free. */
HC_INLINE void harden_check_not_free(void *slot, uintptr_t t) {
    if (harden_tagged_free(slot, t))
        harden_free_of_free(slot);
}

/* A question about a block the program says is live (malloc_usable_size):
 * is it free? Only the hardened build asks; the default one would read
 * program data that a checker (memcheck) sees as never written. Under a
 * checker (track.h) a freed block's words are the checker's to guard, and
 * it would report the read: there the question is not asked. */
HC_INLINE int harden_block_is_free(const void *slot) {
    return !HC_TRACK_VALGRIND && !HC_TRACK_ASAN && harden_tagged_free(slot, harden_slot_key(slot));
}

/* Freed blocks are not handed straight back: hc_free links `slot` (its
 * key t) behind the list's `head`, not in front of it, so the malloc after
 * a free returns another block, and a program that frees a block and
 * allocates the same size again does not get the block it still points
 * to. head's next becomes slot's (re-encoded: the key cancels out), slot
 * becomes head's: t ^ head is slot ^ key ^ head. Head's link is decoded
 * and checked first (0 if it is bad: the caller stops the program, with
 * harden_corrupt_link_last), so a write after free into head stops here,
 * before its link is rewritten with a valid one. Stops: the use after
 * free whose next malloc is the attacker's (the freed block refilled with
 * chosen data while the program still uses it), and makes a double free
 * after one malloc stop at its call (the block is still free). Cannot
 * stop: reuse one malloc later, or when the list was empty. */
HC_INLINE int harden_link_behind(void *head, void *slot, uintptr_t t) {
    uintptr_t *h = (uintptr_t *)head, *s = (uintptr_t *)slot;
    uintptr_t next = h[0] ^ t ^ (uintptr_t)slot ^ (uintptr_t)head; /* t ^ slot ^ head: head's key */
    if (HC_UNLIKELY(harden_link_is_bad(next)))
        return 0;
    s[0] = next ^ t;
    s[1] = t;
    h[0] = t ^ (uintptr_t)head;
    return 1;
}

/* harden_corrupt_link for a caller that calls it last: not declared
 * noreturn, so the call is a jump, and the fast path keeps no frame for it. */
__attribute__((cold)) void harden_corrupt_link_last(const void *slot);
/* The hardened drop-in's sized frees, C++ sized delete (stage 4's
 * dropin_new.cc) and C23 free_sized (dropin.c): frees `ptr` after checking
 * that `size` names the class of its block (stage 3's sized_free_checks.c
 * defines it), and stops with `wrong_size` ("delete(): wrong size for the
 * block at") where it does not. Stops a delete as the wrong type or the wrong form
 * (`delete` of a `new char[4096]` gives 1), or a free_sized given another
 * block's size, before the block reaches a list it does not belong to. A
 * large or zero-size block is freed by address unchecked (a sampled or
 * aligned block may be large for a small size); a guarded block's size
 * must be a guarded size that fits it. */
void harden_sized_free(void *ptr, size_t size, const char *wrong_size);
/* The same for an aligned block (C++ aligned sized delete, C23
 * free_aligned_sized): `size` with `alignment` must name the class that
 * hc_aligned_alloc took for them, which may be above size's own. */
void harden_aligned_sized_free(void *ptr, size_t alignment, size_t size, const char *wrong_size);

/* The default build's free tag: the hardened one above does its work. */
HC_INLINE int free_tag_try_set(void *slot) { (void)slot; return 1; }

/* A pointer a list yielded on a slow path: `found` is the class of its page
 * (the page map), `want` the list's. Not evaluated in the default build. */
#define harden_check_class(slot, want, found)                                               \
    do {                                                                                    \
        if (HC_UNLIKELY((unsigned)(found) != (unsigned)(want)))                             \
            hc_fatal_pointer_why("malloc(): corrupted free list at", (slot),                \
                                 "a link points outside the small spans of its class");     \
    } while (0)

#else /* !HC_HARDENED: the plain link, and free's tag */

/* The program gets `slot`: it is no longer free (the tag lives in the
 * second word). Stage 3's malloc.c calls it at every hand-out (free_list.h,
 * FL_POP_CLEARS_TAG). */
HC_INLINE void free_tag_clear(void *slot) { ((uintptr_t *)slot)[1] = 0; }

/* No canary: the 16-byte class holds 16 bytes of the program's. */
HC_INLINE int harden_canary_intact(void *slot) { (void)slot; return 1; }
HC_INLINE void harden_overflow(const void *slot) { (void)slot; }
HC_INLINE void harden_overflow_last(const void *slot) { (void)slot; }

/* malloc(0) is the smallest class's object; nothing else is zero-sized. */
HC_INLINE void *harden_zero_size_alloc(void) { return NULL; }
HC_INLINE int harden_is_zero_size(const void *p) { (void)p; return 0; }
HC_INLINE void harden_fork_lock(void) {}
HC_INLINE void harden_fork_unlock(int in_child) { (void)in_child; }

HC_INLINE void harden_init(void) {}
HC_INLINE uintptr_t harden_slot_key(const void *slot) { (void)slot; return 0; }
HC_INLINE void *harden_decode(const void *slot, uintptr_t stored, uintptr_t t) {
    (void)slot;
    (void)t;
    return (void *)stored;
}
HC_INLINE void harden_store(void *slot, void *next, uintptr_t t) {
    (void)t;
    *(void **)slot = next;
}
HC_INLINE void harden_check_not_free(void *slot, uintptr_t t) { (void)slot; (void)t; }
HC_INLINE int harden_block_is_free(const void *slot) { (void)slot; return 0; }

/* Free's tag: the block's own address minus an odd constant. Odd, so it is
 * never the address of an aligned object; the block's own, so copying a
 * freed block's words into another block (a program that copies freed
 * memory: glibc's tst-tcfree3) gives that block no tag, and a tag that is
 * set can be trusted: the block is free. One `lea` from the address, like
 * loading a constant would be. Not a secret: a guard against mistakes, not
 * against an attacker who writes it on purpose (the hardened build's tag
 * is key ^ slot). */
#define FREE_TAG_OFFSET 0x3b9aca07u

HC_INLINE uintptr_t free_tag_value(const void *slot) {
    return (uintptr_t)slot - FREE_TAG_OFFSET;
}

/* hc_free's step: 0 if `slot` carries the tag (it is free already), else
 * tags it and returns 1. The caller has checked that slot is the start of
 * an object of a small class, so its second word is the allocator's to
 * read: the program's data while the block is live, the tag once free. */
HC_INLINE int free_tag_try_set(void *slot) {
    uintptr_t *word = (uintptr_t *)slot, tag = free_tag_value(slot);
    if (HC_UNLIKELY(word[1] == tag))
        return 0;
    word[1] = tag;
    return 1;
}
#define harden_check_class(slot, want, found) ((void)0)

#endif /* HC_HARDENED */

#endif /* HC_HARDEN_H_ */
