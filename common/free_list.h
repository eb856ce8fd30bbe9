/* common/free_list.h — intrusive singly linked lists of free objects.
 *
 * A free object's first word holds the pointer to the next free object, so a
 * list costs no memory beyond its head. Its second word holds free's tag
 * (common/harden.h), so every class that serves a request has room for two
 * words (16 bytes and up; class 1, 8 bytes, serves none: size_class.h).
 *
 * Beside the head the list keeps its limit (max_length, used from stage 2)
 * and one counter, `room`: how many more objects fit under the limit. A push
 * decrements it and a pop increments it, so the thread cache's free path
 * checks "room == 0" with no second field to compare against. The length is
 * max_length - room, computed modulo 2^32: a list with no limit (0, as in
 * the central cache's buckets) simply runs room below zero, and the
 * difference is still its length.
 *
 * Other threads read a thread cache's lists for stats: the owner stores the
 * counters with relaxed atomic stores (a plain mov on x86) and readers load
 * them the same way, so a reader sees some recent value, never a torn one.
 *
 * To a memory checker a free object belongs to nobody (common/track.h), so
 * the link word is opened only for the instant the list reads or writes it:
 * every access to a free object goes through fl_next / fl_set_next.
 *
 * The hardened build (common/harden.h) stores the link encoded, checks it
 * when it is read, and tags a free object so that freeing it again stops;
 * in the default build those calls compile to the plain pointer.
 *
 * A double free the fast path lets through (it has no check) leaves an
 * object on a list twice, the list looping back on itself. fl_pop_range,
 * which every batch cut from a list goes through, stops the program when
 * the cut ends inside such a cycle (of up to the batch's length), when it
 * leaves a list that is empty by its count but not by its head, or when
 * the list ends before its count says: a cut sets its last link to NULL,
 * so a longer cycle, cut batch by batch, leads a later cut back into an
 * earlier one and to that NULL, within its own walk or the check's. A
 * cycle never reaches another layer as a batch whose count lies, nor, as
 * long as the earlier batch's links are as it left them (the central
 * cache relinks only what goes back to spans), as a batch of objects
 * already given back. */
#ifndef HC_FREE_LIST_H_
#define HC_FREE_LIST_H_

#include <stddef.h>
#include <stdint.h>

#include "common/compiler.h"
#include "common/fatal.h"
#include "common/harden.h"
#include "common/track.h"

typedef struct hc_free_list {
    void *head;
    uint32_t room;       /* max_length - length (mod 2^32) */
    uint32_t max_length; /* used from stage 2: the list's current limit */
} hc_free_list;

/* The owner's counter update: a relaxed store, so concurrent readers are
 * well defined; the owner is the only writer, so reading it plainly is too. */
HC_INLINE void fl_set_room(hc_free_list *list, uint32_t room) {
    __atomic_store_n(&list->room, room, __ATOMIC_RELAXED);
}

/* room + 1 and room - 1, by the list's only writer, on the fast path. C11
 * spells that as a relaxed load and a relaxed store (three instructions);
 * on x86 one add to memory without a lock prefix does the same (a reader
 * sees the old value or the new one, as with a relaxed store) and is opaque
 * to the compiler, so it cannot race in the C sense with readers' atomic
 * loads. It is not an atomic read-modify-write: nobody else writes room.
 * Under ThreadSanitizer, which does not see inside asm, the C11 spelling,
 * so that TSan checks the protocol (race_test_tsan). */
#if (defined(__x86_64__) || defined(__i386__)) && !HC_TSAN
#define HC_FL_X86 1
#endif

#if HC_FL_X86
HC_INLINE void fl_room_up(hc_free_list *list) { __asm__("addl $1, %0" : "+m"(list->room)); }
HC_INLINE void fl_room_down(hc_free_list *list) { __asm__("subl $1, %0" : "+m"(list->room)); }
#else
HC_INLINE void fl_room_up(hc_free_list *list) { fl_set_room(list, list->room + 1); }
HC_INLINE void fl_room_down(hc_free_list *list) { fl_set_room(list, list->room - 1); }
#endif

/* room == 0: the list is at its limit. On x86 one compare with memory (gcc
 * would load and test: one more instruction on every free). */
HC_INLINE int fl_full(const hc_free_list *list) {
#if HC_FL_X86
    unsigned char full;
    __asm__("cmpl $0, %1" : "=@cce"(full) : "m"(list->room));
    return full;
#else
    return list->room == 0;
#endif
}

/* Objects on the list; any thread may ask (stats), the answer a snapshot. */
HC_INLINE uint32_t fl_length(const hc_free_list *list) {
    return __atomic_load_n(&list->max_length, __ATOMIC_RELAXED) -
           __atomic_load_n(&list->room, __ATOMIC_RELAXED);
}

/* Changes the limit, keeping the length: room moves by the same amount. */
HC_INLINE void fl_set_limit(hc_free_list *list, uint32_t limit) {
    fl_set_room(list, list->room + (limit - list->max_length));
    __atomic_store_n(&list->max_length, limit, __ATOMIC_RELAXED);
}

/* `t` is the slot's key (harden_slot_key; 0 and unused by default). */
HC_INLINE void *fl_next_t(void *obj, uintptr_t t) {
    track_internal_begin(obj, FREE_LINK_AND_TAG_BYTES);
    void *next = harden_decode(obj, *(uintptr_t *)obj, t);
    track_internal_end(obj, FREE_LINK_AND_TAG_BYTES);
    return next;
}

HC_INLINE void fl_set_next_t(void *obj, void *next, uintptr_t t) {
    track_internal_begin(obj, FREE_LINK_AND_TAG_BYTES);
    harden_store(obj, next, t);
    track_internal_end(obj, FREE_LINK_AND_TAG_BYTES);
}

HC_INLINE void *fl_next(void *obj) { return fl_next_t(obj, harden_slot_key(obj)); }

HC_INLINE void fl_set_next(void *obj, void *next) { fl_set_next_t(obj, next, harden_slot_key(obj)); }

HC_INLINE int fl_empty(const hc_free_list *list) { return list->head == NULL; }

HC_INLINE void fl_push(hc_free_list *list, void *obj) {
    uintptr_t t = harden_slot_key(obj);
    track_internal_begin(obj, FREE_LINK_AND_TAG_BYTES);
    harden_check_not_free(obj, t); /* hardened: a double free stops here */
    track_internal_end(obj, FREE_LINK_AND_TAG_BYTES);
    fl_set_next_t(obj, list->head, t);
    list->head = obj;
    fl_room_down(list);
}

/* hc_free's push (stage 3). The hardened build links the block behind the
 * list's head (harden_link_behind), so that the next malloc of its class
 * returns another block; with an empty list, and in the default build, the
 * block is the head. The tag is compared first, for either list: then the
 * compare reads the block's word straight from memory, once. */
HC_INLINE void fl_push_freed(hc_free_list *list, void *obj) {
#if HC_HARDENED
    uintptr_t t = harden_slot_key(obj);
    track_internal_begin(obj, FREE_LINK_AND_TAG_BYTES);
    harden_check_not_free(obj, t);
    track_internal_end(obj, FREE_LINK_AND_TAG_BYTES);
    void *head = list->head;
    if (HC_LIKELY(head != NULL)) {
        track_internal_begin(obj, FREE_LINK_AND_TAG_BYTES);
        track_internal_begin(head, FREE_LINK_AND_TAG_BYTES);
        int linked = harden_link_behind(head, obj, t);
        track_internal_end(head, FREE_LINK_AND_TAG_BYTES);
        track_internal_end(obj, FREE_LINK_AND_TAG_BYTES);
        if (HC_UNLIKELY(!linked)) {
            harden_corrupt_link_last(head); /* head's link was overwritten */
            return;
        }
        fl_room_down(list);
        return;
    }
#endif
    fl_push(list, obj);
}

/* hc_free's step (common/harden.h): 0 if `obj` carries free's tag, which
 * means it is free already; else tags it, and returns 1. */
HC_INLINE int fl_tag_free(void *obj) {
    track_internal_begin(obj, FREE_LINK_AND_TAG_BYTES);
    int tagged_now = free_tag_try_set(obj);
    track_internal_end(obj, FREE_LINK_AND_TAG_BYTES);
    return tagged_now;
}

/* `obj` is the program's now: its free tag is cleared. */
HC_INLINE void fl_clear_tag(void *obj) {
    track_internal_begin(obj, FREE_LINK_AND_TAG_BYTES);
    free_tag_clear(obj);
    track_internal_end(obj, FREE_LINK_AND_TAG_BYTES);
}

/* Free's tag is cleared where a block is handed out, by whatever sets it.
 * The hardened build tags every free block, in every stage (harden.h), so
 * there fl_pop clears it. The default build's tag is stage 3's hc_free's
 * alone: stage 3's malloc.c clears it where it hands a block out, and
 * stages 1 and 2, which never set it, pay no store a malloc. */
#define FL_POP_CLEARS_TAG HC_HARDENED

/* Returns NULL when the list is empty. The new head is prefetched: the
 * next pop must load its link before it can return, and on a list the
 * program filled long ago (a round of frees, a dead thread's adopted
 * cache) that line has left the core's caches, so each pop would wait for
 * memory in turn. Started now, the load overlaps the program's work until
 * its next malloc. One instruction per hit; a prefetch never faults, of
 * NULL or of anything else. */
HC_INLINE void *fl_pop(hc_free_list *list) {
    void *obj = list->head;
    if (HC_LIKELY(obj != NULL)) {
        void *next = fl_next(obj);
        list->head = next;
        __builtin_prefetch(next);
        if (FL_POP_CLEARS_TAG)
            fl_clear_tag(obj);
        fl_room_up(list);
    }
    return obj;
}

/* Pushes the chain first..last (already linked, `n` objects) in one step. */
HC_INLINE void fl_push_range(hc_free_list *list, void *first, void *last, uint32_t n) {
    fl_set_next(last, list->head);
    list->head = first;
    fl_set_room(list, list->room - n);
}

/* Detaches up to `n` objects as a NULL-terminated chain; returns how many,
 * with *first / *last set to its ends (both NULL when the list was empty). */
HC_INLINE uint32_t fl_pop_range(hc_free_list *list, uint32_t n, void **first, void **last) {
    void *head = list->head, *tail = NULL, *obj = head;
    uint32_t taken = 0, length = fl_length(list);
    while (taken < n && obj != NULL) {
        tail = obj;
        obj = fl_next(obj);
        taken++;
    }
    if (tail != NULL) fl_set_next(tail, NULL);
    /* A node met twice (a double free the fast path let through) means a
     * cycle, and the cut ends inside it: then what is left of the list
     * leads back to the cut's tail within `taken` links. A longer cycle,
     * cut before, leads into the earlier cut and ends at its NULL: the list
     * ends before its count, in this cut's walk or in this walk. */
    uint32_t steps = 0;
    void *p = obj;
    for (; p != NULL && steps < taken; p = fl_next(p), steps++)
        if (HC_UNLIKELY(p == tail))
            hc_fatal_pointer_why("free(): double free detected of", tail,
                                 "a thread's free list holds it twice");
    if (HC_UNLIKELY(p == NULL && taken + steps < length))
        hc_fatal_pointer_why("free(): double free detected of", tail,
                             "a thread's free list ends before its count says: it loops back into a cut");
    list->head = obj;
    fl_set_room(list, list->room + taken);
    /* Empty by its count, yet a head: mallocs have popped into a cycle. */
    if (HC_UNLIKELY(obj != NULL && fl_length(list) == 0))
        hc_fatal_pointer_why("free(): double free detected of", obj,
                             "a thread's free list holds it more often than its count says");
    *first = taken ? head : NULL;
    *last = tail;
    return taken;
}

#endif /* HC_FREE_LIST_H_ */
