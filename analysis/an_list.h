/* an_list.h — intrusive doubly linked lists over dense keys, shared by the
 * list-based cache policies (LRU, FIFO, ARC, S3-FIFO).  A policy owns one
 * prev/next array pair over its keys; a key is in at most one list at a
 * time, so several lists share the arrays.  Head = most recent end. */
#ifndef AN_LIST_H
#define AN_LIST_H

#include <stdint.h>

#include "an_stream.h"

typedef struct {
    uint32_t head, tail;
    uint64_t size;
} an_list;

typedef struct {
    uint32_t *prev, *next;
} an_links;

static inline void an_list_init(an_list *l) { l->head = l->tail = AN_NONE; l->size = 0; }

static inline void an_list_push_head(an_list *l, an_links *ln, uint32_t k)
{
    ln->prev[k] = AN_NONE;
    ln->next[k] = l->head;
    if (l->head != AN_NONE) ln->prev[l->head] = k;
    else l->tail = k;
    l->head = k;
    l->size++;
}

static inline void an_list_remove(an_list *l, an_links *ln, uint32_t k)
{
    uint32_t p = ln->prev[k], n = ln->next[k];
    if (p != AN_NONE) ln->next[p] = n; else l->head = n;
    if (n != AN_NONE) ln->prev[n] = p; else l->tail = p;
    l->size--;
}

/* Remove and return the tail (oldest); AN_NONE when empty. */
static inline uint32_t an_list_pop_tail(an_list *l, an_links *ln)
{
    uint32_t t = l->tail;
    if (t != AN_NONE) an_list_remove(l, ln, t);
    return t;
}

/* Allocate the link arrays for n keys (0 on success). */
int an_links_alloc(an_links *ln, uint32_t n);
void an_links_free(an_links *ln);

#endif
