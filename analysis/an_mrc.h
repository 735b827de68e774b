/* an_mrc.h — the exact LRU miss-ratio curve of a scope, for every capacity
 * at once, from one stack-distance pass per stream (an_reuse.h): an LRU
 * cache of C keys misses an access iff its distance is cold or > C.  For a
 * scope with several streams (one cache per head or per layer, each of C
 * keys) the misses of the streams are summed at each C.
 *
 * The curve is a plain struct so plots can draw it directly. */
#ifndef AN_MRC_H
#define AN_MRC_H

#include <stdint.h>

#include "an_spill.h"
#include "an_stream.h"
#include "rn_error.h"

typedef struct {
    int64_t n;              /* points: capacities 1..n (n = the largest stream's distinct keys) */
    uint64_t *capacity;     /* [n] capacity in keys (slots) per cache */
    uint64_t *misses;       /* [n] */
    double *miss_ratio;     /* [n] misses / accesses */
    double *hit_ratio;      /* [n] 1 − miss_ratio */
    uint64_t accesses;      /* counted accesses (after warm-up) */
    uint64_t cold;          /* compulsory misses (first accesses) */
    double sample_rate;     /* 0: exact; else estimated from keys sampled at this rate (an_shards.h) */
} an_mrc;

/* Build the curve of every stream in ss, counting accesses at positions >=
 * warmup: an_mrc_build_spill over ss held resident (an_spill_resident).
 * Allocates the arrays (an_mrc_free). */
int an_mrc_build(const an_streams *ss, int32_t warmup, an_mrc *out, rn_error *err);
/* The same over spilled streams (an_spill.h; the warm-up is the spill's):
 * stack distances computed chunk by chunk from the key file (or a resident
 * spill's memory), memory O(distinct keys). */
int an_mrc_build_spill(const an_spill *sp, an_mrc *out, rn_error *err);
void an_mrc_free(an_mrc *m);

/* Misses of an LRU cache of capacity C (any C >= 1; beyond n it is cold). */
uint64_t an_mrc_misses_at(const an_mrc *m, uint64_t C);

#endif
