/* rn_cache_lru.c — Least Recently Used: on a miss with a full cache, evict
 * the key whose last access is oldest.  A linked list in recency order
 * (head = most recent); O(1) per access. */
#include <stdlib.h>

#include "rn_cache.h"
#include "rn_list.h"

typedef struct {
    uint64_t cap;
    rn_links ln;
    rn_list l;
    uint8_t *in;
} lru;

static void lru_free(void *p)
{
    lru *c = p;
    if (!c) return;
    rn_links_free(&c->ln);
    free(c->in);
    free(c);
}

static void *lru_init(uint64_t capacity, uint32_t n_keys)
{
    lru *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->cap = capacity;
    rn_list_init(&c->l);
    c->in = calloc(n_keys ? n_keys : 1, 1);
    if (!c->in || rn_links_alloc(&c->ln, n_keys)) { lru_free(c); return NULL; }
    return c;
}

static int lru_access(void *p, uint32_t k, uint32_t next, rn_victims *v)
{
    lru *c = p;
    (void)next;
    if (c->in[k]) {
        if (c->l.head != k) { rn_list_remove(&c->l, &c->ln, k); rn_list_push_head(&c->l, &c->ln, k); }
        return 1;
    }
    if (c->l.size >= c->cap) {
        uint32_t t = rn_list_pop_tail(&c->l, &c->ln);
        c->in[t] = 0;
        rn_victim(v, t);
        rn_forget(v, t);
    }
    rn_list_push_head(&c->l, &c->ln, k);
    c->in[k] = 1;
    return 0;
}

/* Only the cached keys. */
static uint64_t lru_remembers(uint64_t capacity) { return capacity; }

const rn_policy rn_cache_lru = { "lru", "least recently used", 0, lru_init, lru_access, lru_free,
                                  lru_remembers };
