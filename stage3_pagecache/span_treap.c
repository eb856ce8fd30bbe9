/* stage3_pagecache/span_treap.c — layer 3: the treap of long free spans
 * (span_treap.h says what it is and why). May touch: the left/right links
 * of the spans in the tree, nothing else. */
#include "stage3_pagecache/span_treap.h"

static int key_less(const hc_span *a, const hc_span *b) {
    return a->page_count < b->page_count ||
           (a->page_count == b->page_count && a->start_page < b->start_page);
}

/* Fibonacci hashing: the product's high bits, which decide the comparison,
 * are well mixed even for neighbouring start pages; and it is a bijection,
 * so no two free spans share a priority. */
static uint64_t priority(const hc_span *s) {
    return (uint64_t)s->start_page * UINT64_C(0x9E3779B97F4A7C15);
}

void treap_insert(hc_span **root, hc_span *s) {
    /* Down to the first node s outranks, then split that subtree by s's key
     * into s's left (smaller keys) and right (larger) subtrees. */
    hc_span **link = root;
    while (*link != NULL && priority(*link) > priority(s))
        link = key_less(s, *link) ? &(*link)->left : &(*link)->right;
    hc_span *t = *link, **smaller = &s->left, **larger = &s->right;
    while (t != NULL) {
        if (key_less(t, s)) {
            *smaller = t;
            smaller = &t->right;
            t = t->right;
        } else {
            *larger = t;
            larger = &t->left;
            t = t->left;
        }
    }
    *smaller = *larger = NULL;
    *link = s;
}

void treap_remove(hc_span **root, hc_span *s) {
    hc_span **link = root;
    while (*link != s)
        link = key_less(s, *link) ? &(*link)->left : &(*link)->right;
    /* Zip the two subtrees (every key of a below every key of b) by priority. */
    hc_span *a = s->left, *b = s->right;
    while (a != NULL && b != NULL) {
        if (priority(a) > priority(b)) {
            *link = a;
            link = &a->right;
            a = a->right;
        } else {
            *link = b;
            link = &b->left;
            b = b->left;
        }
    }
    *link = a != NULL ? a : b;
    s->left = s->right = NULL;
}

hc_span *treap_best_fit(hc_span *root, size_t pages) {
    hc_span *best = NULL;
    for (hc_span *t = root; t != NULL;) {
        if (t->page_count >= pages) {
            best = t;
            t = t->left;
        } else {
            t = t->right;
        }
    }
    return best;
}

hc_span *treap_find_aligned(hc_span *t, size_t pages, size_t align, uintptr_t *at) {
    if (t == NULL)
        return NULL;
    if (t->page_count < pages)
        return treap_find_aligned(t->right, pages, align, at);
    hc_span *found = treap_find_aligned(t->left, pages, align, at);
    if (found != NULL)
        return found;
    if (span_holds_aligned(t, pages, align, at))
        return t;
    return treap_find_aligned(t->right, pages, align, at);
}

hc_span *treap_longest(hc_span *t) {
    if (t != NULL)
        while (t->right != NULL) t = t->right;
    return t;
}

/* The subtree `t`: keys strictly between those of lo and hi (NULL: no
 * bound), priorities at most its parent's. */
static const char *check_subtree(const hc_span *t, const hc_span *lo, const hc_span *hi,
                                 const char *(*check_span)(void *, const hc_span *), void *arg) {
    if (t == NULL) return NULL;
    if ((lo != NULL && !key_less(lo, t)) || (hi != NULL && !key_less(t, hi)))
        return "the long-span tree is out of (length, address) order";
    if ((t->left != NULL && priority(t->left) > priority(t)) ||
        (t->right != NULL && priority(t->right) > priority(t)))
        return "the long-span tree is not a heap by priority";
    const char *broken = check_subtree(t->left, lo, t, check_span, arg);
    if (broken == NULL) broken = check_span(arg, t);
    if (broken == NULL) broken = check_subtree(t->right, t, hi, check_span, arg);
    return broken;
}

const char *treap_check(const hc_span *root,
                        const char *(*check_span)(void *arg, const hc_span *s), void *arg) {
    return check_subtree(root, NULL, NULL, check_span, arg);
}
