/* rn_cache_clock.c — CLOCK (second chance, Corbató 1968): the cached keys
 * sit in a circular buffer with one reference bit each.  A hit sets the
 * bit.  A miss with a full cache advances the hand, clearing set bits,
 * until it finds a clear bit; that key is evicted and the new key takes its
 * frame with its bit clear, and the hand moves past it.  (New keys start
 * unreferenced, as in libCacheSim's Clock.)  Amortised O(1). */
#include <stdlib.h>

#include "rn_cache.h"

typedef struct {
    uint64_t cap, size, hand;
    uint32_t *frame;   /* [min(cap, n_keys)] */
    uint8_t *state;    /* per key: bit 0 cached, bit 1 referenced */
} clk;

static void clock_free(void *p)
{
    clk *c = p;
    if (!c) return;
    free(c->frame); free(c->state); free(c);
}

static void *clock_init(uint64_t capacity, uint32_t n_keys)
{
    clk *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->cap = capacity < n_keys ? capacity : (n_keys ? n_keys : 1);
    c->frame = malloc(c->cap * sizeof *c->frame);
    c->state = calloc(n_keys ? n_keys : 1, 1);
    if (!c->frame || !c->state) { clock_free(c); return NULL; }
    return c;
}

static int clock_access(void *p, uint32_t k, uint32_t next, rn_victims *vic)
{
    clk *c = p;
    (void)next;
    if (c->state[k]) { c->state[k] = 3; return 1; }
    if (c->size < c->cap) {
        c->frame[c->size++] = k;
    } else {
        uint32_t v;
        while (c->state[v = c->frame[c->hand]] & 2) {
            c->state[v] = 1;
            if (++c->hand == c->cap) c->hand = 0;
        }
        c->state[v] = 0;
        rn_victim(vic, v);
        rn_forget(vic, v);
        c->frame[c->hand] = k;
        if (++c->hand == c->cap) c->hand = 0;
    }
    c->state[k] = 1;
    return 0;
}

/* Only the cached keys. */
static uint64_t clock_remembers(uint64_t capacity) { return capacity; }

const rn_policy rn_cache_clock = { "clock", "CLOCK, one reference bit (second chance)", 0,
                                    clock_init, clock_access, clock_free, clock_remembers };
