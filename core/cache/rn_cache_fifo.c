/* rn_cache_fifo.c — First In First Out: on a miss with a full cache, evict
 * the key inserted longest ago; hits do not change the order.  A ring of
 * the cached keys in insertion order; O(1) per access. */
#include <stdlib.h>

#include "rn_cache.h"

typedef struct {
    uint64_t cap, size, head; /* head: oldest entry */
    uint32_t *ring;           /* [min(cap, n_keys)] */
    uint8_t *in;
} fifo;

static void fifo_free(void *p)
{
    fifo *c = p;
    if (!c) return;
    free(c->ring); free(c->in); free(c);
}

static void *fifo_init(uint64_t capacity, uint32_t n_keys)
{
    fifo *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->cap = capacity < n_keys ? capacity : (n_keys ? n_keys : 1);
    c->ring = malloc(c->cap * sizeof *c->ring);
    c->in = calloc(n_keys ? n_keys : 1, 1);
    if (!c->ring || !c->in) { fifo_free(c); return NULL; }
    return c;
}

static int fifo_access(void *p, uint32_t k, uint32_t next, rn_victims *v)
{
    fifo *c = p;
    (void)next;
    if (c->in[k]) return 1;
    if (c->size < c->cap) {
        c->ring[c->size++] = k; /* head stays 0 until the ring is full */
    } else {
        c->in[c->ring[c->head]] = 0;
        rn_victim(v, c->ring[c->head]);
        rn_forget(v, c->ring[c->head]);
        c->ring[c->head] = k;
        if (++c->head == c->cap) c->head = 0;
    }
    c->in[k] = 1;
    return 0;
}

/* Only the cached keys. */
static uint64_t fifo_remembers(uint64_t capacity) { return capacity; }

const rn_policy rn_cache_fifo = { "fifo", "first in, first out", 0, fifo_init, fifo_access, fifo_free,
                                   fifo_remembers };
