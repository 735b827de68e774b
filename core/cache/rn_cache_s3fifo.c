/* rn_cache_s3fifo.c — S3-FIFO (Yang et al., SOSP 2023, Algorithm 1): a
 * small FIFO S (10% of the capacity, at least 1 key), a main FIFO M (the
 * rest) and a ghost FIFO G of recently evicted keys (as many entries as M).
 * Each cached key has a 2-bit access count (capped at 3), bumped on hits.
 * A miss inserts into M if the key is in G, else into S, after evicting
 * while the cache is full: from S when |S| >= its size, else from M.
 * Evicting from S moves the tail to M if it was accessed more than once
 * (its count cleared), else to G; evicting from M reinserts the tail with
 * its count decremented until a tail with count 0 leaves.  O(1) amortised. */
#include <stdlib.h>

#include "rn_cache.h"
#include "rn_list.h"

enum { NONE = 0, S, M, G };

typedef struct {
    uint64_t cap, cs, cm, cg;
    uint32_t cur;      /* the key being accessed (a miss) */
    rn_links ln;
    rn_list l[4];
    uint8_t *where, *freq;
} s3;

static void s3_free(void *q)
{
    s3 *c = q;
    if (!c) return;
    rn_links_free(&c->ln);
    free(c->where); free(c->freq); free(c);
}

static void *s3_init(uint64_t capacity, uint32_t n_keys)
{
    s3 *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->cap = capacity;
    c->cs = capacity / 10 ? capacity / 10 : 1;
    c->cm = capacity - c->cs;
    c->cg = c->cm ? c->cm : 1;
    for (int i = 0; i < 4; i++) rn_list_init(&c->l[i]);
    c->where = calloc(n_keys ? n_keys : 1, 1);
    c->freq = calloc(n_keys ? n_keys : 1, 1);
    if (!c->where || !c->freq || rn_links_alloc(&c->ln, n_keys)) { s3_free(c); return NULL; }
    return c;
}

static void move_to(s3 *c, uint32_t k, int to)
{
    if (c->where[k]) rn_list_remove(&c->l[c->where[k]], &c->ln, k);
    c->where[k] = (uint8_t)to;
    if (to) rn_list_push_head(&c->l[to], &c->ln, k);
}

static void to_ghost(s3 *c, uint32_t k, rn_victims *v)
{
    rn_victim(v, k);
    if (c->l[G].size >= c->cg) {
        uint32_t t = c->l[G].tail;
        move_to(c, t, NONE);
        if (t != c->cur) rn_forget(v, t); /* the key being accessed is inserted next */
    }
    move_to(c, k, G);
}

static void evict_m(s3 *c, rn_victims *v)
{
    while (c->l[M].size > 0) {
        uint32_t t = c->l[M].tail;
        if (c->freq[t] > 0) {
            c->freq[t]--;
            move_to(c, t, M);
        } else {
            rn_victim(v, t);
            move_to(c, t, NONE); /* main's evictions get no ghost entry */
            rn_forget(v, t);
            return;
        }
    }
}

static void evict_s(s3 *c, rn_victims *v)
{
    while (c->l[S].size > 0) {
        uint32_t t = c->l[S].tail;
        if (c->freq[t] > 1) {
            c->freq[t] = 0;
            move_to(c, t, M);
            if (c->l[M].size > c->cm) evict_m(c, v);
        } else {
            to_ghost(c, t, v);
            return;
        }
    }
}

static int s3_access(void *q, uint32_t k, uint32_t next, rn_victims *v)
{
    s3 *c = q;
    (void)next;
    int w = c->where[k];
    if (w == S || w == M) {
        if (c->freq[k] < 3) c->freq[k]++;
        return 1;
    }
    c->cur = k;
    while (c->l[S].size + c->l[M].size >= c->cap) {
        if (c->l[S].size >= c->cs || c->l[M].size == 0) evict_s(c, v);
        else evict_m(c, v);
    }
    c->freq[k] = 0;
    move_to(c, k, c->where[k] == G ? M : S); /* the ghost may have dropped k meanwhile */
    return 0;
}

/* The cached keys (|S| + |M| <= capacity) and the ghost entries (|G| <=
 * its size, that of M or 1). */
static uint64_t s3_remembers(uint64_t capacity)
{
    uint64_t cs = capacity / 10 ? capacity / 10 : 1, cm = capacity - cs;
    return capacity + (cm ? cm : 1);
}

const rn_policy rn_cache_s3fifo = { "s3fifo", "S3-FIFO: small, main and ghost FIFO queues", 0,
                                     s3_init, s3_access, s3_free, s3_remembers };
