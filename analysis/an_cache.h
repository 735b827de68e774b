/* an_cache.h — the simulator that replays an access stream through one
 * cache policy.
 *
 * The policies live in core (core/cache/rn_cache_NAME.c, interface and
 * registry rn_cache.h), where the tiered memory state (rn_state.h) runs the
 * same code on the model's real accesses.  A policy caches
 * dense keys 0..n_keys-1 (see an_stream.h) and allocates everything in
 * init: access never allocates.
 *
 * Counting: every access is a hit (key cached) or a miss (key fetched; the
 * policy may then evict).  Bytes moved = misses × (d_v + 1) × 4: a slot's
 * d_v float32 values plus its normaliser z, fetched on each miss.
 */
#ifndef AN_CACHE_H
#define AN_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "an_stream.h"
#include "rn_cache.h"
#include "rn_error.h"

typedef struct {
    uint64_t accesses;    /* counted accesses (after warm-up) */
    uint64_t hits, misses;
} an_sim_result;

static inline double an_hit_ratio(const an_sim_result *r)
{
    return r->accesses ? (double)r->hits / (double)r->accesses : 0.0;
}

/* Replay stream s through a fresh cache of the policy with the given
 * capacity; accesses at positions < warmup (when s->pos) warm the cache
 * but are not counted.  Results are added into *r (so a scope's streams
 * accumulate).  nxt: the stream's next-use array (an_next_use) when the
 * policy needs_next, else NULL. */
int an_simulate(const an_stream *s, const rn_policy *p, uint64_t capacity, int32_t warmup,
                const uint32_t *nxt, an_sim_result *r, rn_error *err);

#endif
