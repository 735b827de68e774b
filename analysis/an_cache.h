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

/* Feed the accesses key[0..n) to cache c of policy p, nxt[i] the next use
 * of key[i] (NULL: none given, RN_CACHE_NONE to each); returns the hits
 * among key[from..n) (the accesses before `from` warm the cache
 * uncounted).  The one replay loop of every simulation: an_simulate's
 * whole stream, and each chunk a spilled or resident stream is read in
 * (an_simrun.h). */
uint64_t an_cache_replay(const rn_policy *p, void *c, const uint32_t *key, const uint32_t *nxt, size_t n,
                         size_t from);

/* Replay stream s through a fresh cache of the policy with the given
 * capacity; accesses at positions < warmup (when s->pos; a prefix of the
 * stream, an_stream_warm) warm the cache but are not counted.  Results are
 * added into *r (so a scope's streams accumulate).  nxt: the stream's
 * next-use array (an_next_use) when the policy needs_next, else NULL. */
int an_simulate(const an_stream *s, const rn_policy *p, uint64_t capacity, int32_t warmup,
                const uint32_t *nxt, an_sim_result *r, rn_error *err);

#endif
