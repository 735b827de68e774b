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
 * Works on spilled streams (an_spill.h; in-memory streams enter as a
 * resident spill), the pipeline of every other simulation.  The hash is of
 * a key's dense number in its stream (numbered by first access). */
#ifndef AN_SHARDS_H
#define AN_SHARDS_H

#include <stdint.h>

#include "an_cache.h"
#include "an_mrc.h"
#include "an_simrun.h"
#include "an_spill.h"
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

/* The sampled LRU curve of every stream of sp (its warm prefixes warm the
 * stacks uncounted), summed over the streams as an_mrc_build_spill does, at
 * capacities 1..n (n = the largest stream's distinct keys).  *rate_out:
 * the final rate (the smallest over the streams for a fixed size).
 * out->misses are the estimates rounded; out->miss_ratio the estimates
 * (clamped to [0, 1]).  Reads sp's key file once, in chunks. */
int an_shards_mrc(const an_spill *sp, const an_shards_opts *o, an_mrc *out, double *rate_out, rn_error *err);

/* 1 when key k (a stream's dense key) is sampled at threshold T. */
int an_shards_sampled(uint32_t k, uint32_t T);

/* The threshold of a rate: round(rate·P), at least 1. */
uint32_t an_shards_threshold(double rate);

/* Mini-simulations: the policy × capacity grid of an_simgrid_run_spill,
 * estimated from the accesses to keys sampled at `rate` (held in memory:
 * about rate × the accesses), each capacity C run at max(1, round(C·R)) and
 * each cell's miss ratio applied to every counted access of the whole
 * streams (the ratio over the scope's caches together).  g reports the
 * capacities asked for. */
int an_shards_grid(const an_spill *sp, double rate, const rn_policy **pol, int np, const uint64_t *caps, int nc,
                   uint64_t slot_bytes, an_progress_fn progress, void *user, an_simgrid *g, rn_error *err);

#endif
