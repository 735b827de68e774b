/* rn_list.h — intrusive doubly linked lists over dense keys, shared by the
 * list-based cache policies (LRU, FIFO, ARC, S3-FIFO).  A policy owns one
 * prev/next array pair over its keys; a key is in at most one list at a
 * time, so several lists share the arrays.  Head = most recent end. */
#ifndef RN_LIST_H
#define RN_LIST_H

#include <stdint.h>

/* "no key": the end of a list (the same value as rn_cache.h's
 * RN_CACHE_NONE, so a policy may hand either to the other) */
#define RN_LIST_NIL UINT32_MAX

typedef struct {
    uint32_t head, tail;
    uint64_t size;
} rn_list;

typedef struct {
    uint32_t *prev, *next;
} rn_links;

static inline void rn_list_init(rn_list *l) { l->head = l->tail = RN_LIST_NIL; l->size = 0; }

static inline void rn_list_push_head(rn_list *l, rn_links *ln, uint32_t k)
{
    ln->prev[k] = RN_LIST_NIL;
    ln->next[k] = l->head;
    if (l->head != RN_LIST_NIL) ln->prev[l->head] = k;
    else l->tail = k;
    l->head = k;
    l->size++;
}

static inline void rn_list_remove(rn_list *l, rn_links *ln, uint32_t k)
{
    uint32_t p = ln->prev[k], n = ln->next[k];
    if (p != RN_LIST_NIL) ln->next[p] = n; else l->head = n;
    if (n != RN_LIST_NIL) ln->prev[n] = p; else l->tail = p;
    l->size--;
}

/* Remove and return the tail (oldest); RN_LIST_NIL when empty. */
static inline uint32_t rn_list_pop_tail(rn_list *l, rn_links *ln)
{
    uint32_t t = l->tail;
    if (t != RN_LIST_NIL) rn_list_remove(l, ln, t);
    return t;
}

/* Allocate the link arrays for n keys (0 on success). */
int rn_links_alloc(rn_links *ln, uint32_t n);
void rn_links_free(rn_links *ln);

#endif
