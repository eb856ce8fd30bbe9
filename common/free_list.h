/* common/free_list.h — intrusive singly linked lists of free objects.
 *
 * A free object's first word holds the pointer to the next free object, so a
 * list costs no memory beyond its head: the smallest class (8 bytes) is
 * exactly big enough for that pointer. The length is kept beside the head
 * because the layers above decide by it (batch transfer, limits, stats).
 *
 * To a memory checker a free object belongs to nobody (common/track.h), so
 * the link word is opened only for the instant the list reads or writes it:
 * every access to a free object goes through fl_next / fl_set_next. */
#ifndef HC_FREE_LIST_H_
#define HC_FREE_LIST_H_

#include <stddef.h>
#include <stdint.h>

#include "common/compiler.h"
#include "common/track.h"

typedef struct hc_free_list {
    void *head;
    uint32_t length;
    uint32_t max_length; /* used from stage 2: the list's current limit */
} hc_free_list;

HC_INLINE void *fl_next(void *obj) {
    track_internal_begin(obj, sizeof(void *));
    void *next = *(void **)obj;
    track_internal_end(obj, sizeof(void *));
    return next;
}

HC_INLINE void fl_set_next(void *obj, void *next) {
    track_internal_begin(obj, sizeof(void *));
    *(void **)obj = next;
    track_internal_end(obj, sizeof(void *));
}

HC_INLINE int fl_empty(const hc_free_list *list) { return list->head == NULL; }

/* Only the owner writes a length, but stats read other threads' lengths
 * (relaxed atomic loads): the store is a relaxed atomic too, so that read is
 * no data race in C11. On x86 it is the same one `mov`. */
HC_INLINE void fl_set_length(hc_free_list *list, uint32_t length) {
    __atomic_store_n(&list->length, length, __ATOMIC_RELAXED);
}

HC_INLINE void fl_push(hc_free_list *list, void *obj) {
    fl_set_next(obj, list->head);
    list->head = obj;
    fl_set_length(list, list->length + 1);
}

/* Returns NULL when the list is empty. */
HC_INLINE void *fl_pop(hc_free_list *list) {
    void *obj = list->head;
    if (HC_LIKELY(obj != NULL)) {
        list->head = fl_next(obj);
        fl_set_length(list, list->length - 1);
    }
    return obj;
}

/* Pushes the chain first..last (already linked, `n` objects) in one step. */
HC_INLINE void fl_push_range(hc_free_list *list, void *first, void *last, uint32_t n) {
    fl_set_next(last, list->head);
    list->head = first;
    fl_set_length(list, list->length + n);
}

/* Detaches up to `n` objects as a NULL-terminated chain; returns how many,
 * with *first / *last set to its ends (both NULL when the list was empty). */
HC_INLINE uint32_t fl_pop_range(hc_free_list *list, uint32_t n, void **first, void **last) {
    void *head = list->head, *tail = NULL, *obj = head;
    uint32_t taken = 0;
    while (taken < n && obj != NULL) {
        tail = obj;
        obj = fl_next(obj);
        taken++;
    }
    if (tail != NULL) fl_set_next(tail, NULL);
    list->head = obj;
    fl_set_length(list, list->length - taken);
    *first = taken ? head : NULL;
    *last = tail;
    return taken;
}

#endif /* HC_FREE_LIST_H_ */
