/* rn_cache_opt.c — Belady's OPT (MIN): on a miss with a full cache, evict
 * the key whose next access is furthest in the future (never = infinitely
 * far).  When the missing key itself is the furthest it is not kept (it
 * would be evicted first anyway), so no other policy can miss less.  The
 * next-use oracle comes from one backward pass (an_next_use).  A binary
 * max-heap on next use; O(log C) per access. */
#include <stdlib.h>

#include "rn_cache.h"

typedef struct {
    uint64_t cap, size;
    uint32_t *heap;     /* [min(cap, n_keys)] keys */
    uint32_t *at;       /* per key: heap index or RN_CACHE_NONE */
    uint32_t *nx;       /* per key: next use (RN_CACHE_NONE = never, the largest) */
} opt;

static inline void put(opt *c, uint64_t i, uint32_t k) { c->heap[i] = k; c->at[k] = (uint32_t)i; }

static void sift_up(opt *c, uint64_t i)
{
    uint32_t k = c->heap[i];
    while (i > 0 && c->nx[c->heap[(i - 1) / 2]] < c->nx[k]) {
        put(c, i, c->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    put(c, i, k);
}

static void sift_down(opt *c, uint64_t i)
{
    uint32_t k = c->heap[i];
    for (;;) {
        uint64_t l = 2 * i + 1, m;
        if (l >= c->size) break;
        m = l + 1 < c->size && c->nx[c->heap[l + 1]] > c->nx[c->heap[l]] ? l + 1 : l;
        if (c->nx[c->heap[m]] <= c->nx[k]) break;
        put(c, i, c->heap[m]);
        i = m;
    }
    put(c, i, k);
}

static void opt_free(void *p)
{
    opt *c = p;
    if (!c) return;
    free(c->heap); free(c->at); free(c->nx); free(c);
}

static void *opt_init(uint64_t capacity, uint32_t n_keys)
{
    opt *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    size_t n = n_keys ? n_keys : 1;
    c->cap = capacity < n ? capacity : n;
    c->heap = malloc(c->cap * sizeof *c->heap);
    c->at = malloc(n * sizeof *c->at);
    c->nx = malloc(n * sizeof *c->nx);
    if (!c->heap || !c->at || !c->nx) { opt_free(c); return NULL; }
    for (size_t i = 0; i < n; i++) c->at[i] = RN_CACHE_NONE;
    return c;
}

static int opt_access(void *p, uint32_t k, uint32_t next, rn_victims *v)
{
    opt *c = p;
    if (c->at[k] != RN_CACHE_NONE) {
        c->nx[k] = next; /* next use only moves later: sift towards the root */
        sift_up(c, c->at[k]);
        return 1;
    }
    if (c->size < c->cap) {
        c->nx[k] = next;
        put(c, c->size++, k);
        sift_up(c, c->size - 1);
        return 0;
    }
    uint32_t far = c->heap[0];
    if (next >= c->nx[far]) return 0; /* the new key is the furthest: bypass */
    c->at[far] = RN_CACHE_NONE;
    rn_victim(v, far);
    c->nx[k] = next;
    put(c, 0, k);
    sift_down(c, 0);
    return 0;
}

const rn_policy rn_cache_opt = { "opt", "Belady's optimal (clairvoyant) replacement", 1,
                                  opt_init, opt_access, opt_free, NULL };
