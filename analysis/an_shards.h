/* an_shards.h — sampled miss-ratio curves (SHARDS, Waldspurger et al.,
 * FAST 2015; mini-simulations, ATC 2017): estimate a cache's miss ratio at
 * every capacity from the accesses to a hash-chosen subset of the keys.
 *
 * A key is sampled when hash(key) mod P < T (P = 2^24): rate R = T/P.  The
 * sampled accesses keep their order, so an LRU stack distance d among them
 * stands for about d/R among all accesses (every key between two uses of a
 * sampled key is itself sampled with probability R).  The curve counts
 * each sampled access at its scaled distance and divides the misses at
 * capacity C by the expected sampled accesses N·R (SHARDS_adj: the
 * difference between expected and actual sampled accesses is counted as
 * hits).
 *
 * Fixed rate: T never changes.  Fixed size (max_keys > 0): at most max_keys
 * distinct keys are tracked; when one more arrives the keys with the
 * largest hash are dropped, T falls to the largest hash kept + 1 and the
 * counts so far are scaled by the new rate over the old (SHARDS' fixed-size
 * variant), so memory stays bounded whatever the trace.
 *
 * Other policies: a mini-simulation replays the sampled accesses (at the
 * final rate) through the policy with capacity round(C·R) and takes its
 * miss ratio.
 *
 * The hash is of the key's (layer, head, slot) identity (an_stream.id),
 * so the same keys are sampled in every scope and every run. */
#ifndef AN_SHARDS_H
#define AN_SHARDS_H

#include <stdint.h>

#include "an_cache.h"
#include "an_mrc.h"
#include "an_stream.h"
#include "rn_error.h"

#define AN_SHARDS_P (1u << 24) /* the hash modulus: rates are multiples of 1/P */

typedef struct {
    double rate;        /* initial (fixed-size) or fixed sampling rate, in (0, 1] */
    uint64_t max_keys;  /* > 0: fixed size, at most this many keys per stream */
} an_shards_opts;

/* Parse --sample R: a rate in (0, 1] ("0.01", "1%"), or a fixed size
 * ("8192keys" / "8192k": at most 8192 keys per stream, starting at rate
 * 1).  RN_EINPUT naming --sample otherwise. */
int an_shards_parse(const char *s, an_shards_opts *o, rn_error *err);

/* The sampled LRU curve of every stream of ss (accesses at positions <
 * warmup warm the stacks but are not counted), summed over the streams as
 * an_mrc_build does, at capacities 1..n (n = the largest stream's distinct
 * keys).  *rate_out: the final rate (the smallest over the streams for a
 * fixed size).  out->misses are the estimates rounded; out->miss_ratio the
 * estimates (clamped to [0, 1]). */
int an_shards_mrc(const an_streams *ss, const an_shards_opts *o, int32_t warmup, an_mrc *out,
                  double *rate_out, rn_error *err);

/* 1 when the key of identity id is sampled at threshold T. */
int an_shards_sampled(uint64_t id, uint32_t T);

/* The threshold of a rate: round(rate·P), at least 1. */
uint32_t an_shards_threshold(double rate);

/* Mini-simulation: the estimated misses of policy p at capacity C (keys per
 * cache) over every stream of ss, replaying each stream's accesses to keys
 * sampled at `rate` through a cache of max(1, round(C·rate)) keys; the
 * miss ratio of the sample times the counted accesses of the whole stream.
 * r receives accesses (all counted accesses, as an exact run) and the
 * estimated misses and hits. */
int an_shards_simulate(const an_streams *ss, double rate, const rn_policy *p, uint64_t C, int32_t warmup,
                       an_sim_result *r, rn_error *err);

#endif
