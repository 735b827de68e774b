/* rn_cache_lfu.c — Least Frequently Used: on a miss with a full cache,
 * evict the cached key with the fewest accesses since it entered the cache,
 * ties broken towards the least recently used.  Counts start at 1 on
 * insertion and are forgotten on eviction (in-cache LFU).  A binary
 * min-heap on (count, last access); O(log C) per access. */
#include <stdlib.h>

#include "rn_cache.h"

typedef struct {
    uint64_t cap, size, clock;
    uint32_t *heap;     /* [min(cap, n_keys)] keys */
    uint32_t *at;       /* per key: heap index or RN_CACHE_NONE */
    uint64_t *freq, *last;
} lfu;

static inline int less(const lfu *c, uint32_t a, uint32_t b)
{
    return c->freq[a] != c->freq[b] ? c->freq[a] < c->freq[b] : c->last[a] < c->last[b];
}

static inline void put(lfu *c, uint64_t i, uint32_t k) { c->heap[i] = k; c->at[k] = (uint32_t)i; }

static void sift_down(lfu *c, uint64_t i)
{
    uint32_t k = c->heap[i];
    for (;;) {
        uint64_t l = 2 * i + 1, m;
        if (l >= c->size) break;
        m = l + 1 < c->size && less(c, c->heap[l + 1], c->heap[l]) ? l + 1 : l;
        if (!less(c, c->heap[m], k)) break;
        put(c, i, c->heap[m]);
        i = m;
    }
    put(c, i, k);
}

static void sift_up(lfu *c, uint64_t i)
{
    uint32_t k = c->heap[i];
    while (i > 0 && less(c, k, c->heap[(i - 1) / 2])) {
        put(c, i, c->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    put(c, i, k);
}

static void lfu_free(void *p)
{
    lfu *c = p;
    if (!c) return;
    free(c->heap); free(c->at); free(c->freq); free(c->last); free(c);
}

static void *lfu_init(uint64_t capacity, uint32_t n_keys)
{
    lfu *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    size_t n = n_keys ? n_keys : 1;
    c->cap = capacity < n ? capacity : n;
    c->heap = malloc(c->cap * sizeof *c->heap);
    c->at = malloc(n * sizeof *c->at);
    c->freq = malloc(n * sizeof *c->freq);
    c->last = malloc(n * sizeof *c->last);
    if (!c->heap || !c->at || !c->freq || !c->last) { lfu_free(c); return NULL; }
    for (size_t i = 0; i < n; i++) c->at[i] = RN_CACHE_NONE;
    return c;
}

static int lfu_access(void *p, uint32_t k, uint32_t next, rn_victims *v)
{
    lfu *c = p;
    (void)next;
    c->clock++;
    if (c->at[k] != RN_CACHE_NONE) {
        c->freq[k]++;
        c->last[k] = c->clock;
        sift_down(c, c->at[k]);
        return 1;
    }
    c->freq[k] = 1;
    c->last[k] = c->clock;
    if (c->size >= c->cap) { /* the new key replaces the root */
        c->at[c->heap[0]] = RN_CACHE_NONE;
        rn_victim(v, c->heap[0]);
        rn_forget(v, c->heap[0]); /* its count goes with it */
        put(c, 0, k);
        sift_down(c, 0);
    } else {
        put(c, c->size++, k);
        sift_up(c, c->size - 1);
    }
    return 0;
}

/* Only the cached keys (their counts are forgotten on eviction). */
static uint64_t lfu_remembers(uint64_t capacity) { return capacity; }

const rn_policy rn_cache_lfu = { "lfu", "least frequently used (in-cache counts, LRU ties)", 0,
                                  lfu_init, lfu_access, lfu_free, lfu_remembers };
