/* an_reuse.h — reuse of slots over time: reuse time and exact LRU stack
 * distance of every access, histograms and percentiles.
 *
 * Reuse time of an access: tokens since the previous access to the same
 * key (pos − previous pos; 0 when the key was touched earlier in the same
 * token), or cold (first access).
 *
 * Stack distance of an access: 1 + the number of distinct keys accessed
 * since the previous access to the same key (so an LRU cache of C keys hits
 * exactly the accesses with distance <= C), or cold.  Computed in
 * O(N log n_keys) with a Fenwick tree over "last access" marks whose time
 * axis is compacted whenever it fills, so memory is O(n_keys), never
 * O(N·M).
 */
#ifndef AN_REUSE_H
#define AN_REUSE_H

#include <stddef.h>
#include <stdint.h>

#include "an_stream.h"
#include "rn_error.h"

#define AN_COLD UINT32_MAX /* distance / reuse time of a first access */

/* dist[i] = stack distance of access i (>= 1) or AN_COLD. */
int an_stack_distances(const an_stream *s, uint32_t *dist, rn_error *err);

/* The same, access by access: a stack-distance state over keys
 * 0..n_keys-1 that an_sd_feed advances by n accesses at a time (dist[i]
 * for key[i]), so a stream need not be in memory at once.  Memory
 * O(n_keys). */
typedef struct {
    int32_t *fw;        /* Fenwick tree over the time axis */
    uint32_t *owner;    /* [F] key whose last access is at that time */
    uint8_t *mark;      /* [F] a live last-access mark */
    uint32_t *last;     /* [n_keys] time of each key's last access */
    uint32_t nk, F, t;  /* keys, time axis length, next free time */
    int32_t live;       /* distinct keys seen */
} an_sd;
int an_sd_init(an_sd *sd, uint32_t n_keys, rn_error *err);
void an_sd_feed(an_sd *sd, const uint32_t *key, size_t n, uint32_t *dist);
void an_sd_free(an_sd *sd);
/* Back to the state of an_sd_init in time proportional to the keys seen:
 * keys[0..n) must hold every key fed since the init or the last reset
 * (repeats and unseen keys are harmless). */
void an_sd_reset(an_sd *sd, const uint32_t *keys, size_t n);

/* reuse[i] = reuse time of access i in tokens or AN_COLD (needs s->pos). */
int an_reuse_times(const an_stream *s, uint32_t *reuse, rn_error *err);

/* A histogram over non-negative integer values in log2 bins: bin 0 holds
 * value 0, bin b >= 1 holds [2^(b-1), 2^b).  lo[b] / hi[b] are the bin's
 * inclusive bounds.  cold counts the AN_COLD entries (kept apart). */
#define AN_HIST_BINS 33
typedef struct {
    int n_bins;                  /* bins in use (up to the largest value's) */
    uint64_t lo[AN_HIST_BINS], hi[AN_HIST_BINS];
    uint64_t count[AN_HIST_BINS];
    uint64_t total;              /* non-cold values */
    uint64_t cold;
} an_hist;

/* Histogram of values[0..n) (AN_COLD entries counted as cold); entries
 * with mask && !mask[i] are skipped. */
void an_hist_build(an_hist *h, const uint32_t *values, size_t n, const uint8_t *mask);

/* Add h's counts into into (both log2 histograms from an_hist_build; into
 * may be all zero). */
void an_hist_merge(an_hist *into, const an_hist *h);

/* The reuse-time (out[0]) and stack-distance (out[1]) histograms of every
 * access of every stream of ss, summed over the streams. */
int an_reuse_hists(const an_streams *ss, an_hist out[2], rn_error *err);

/* Exact percentiles of the non-cold values: out[j] = the smallest v with
 * at least q[j]·total values <= v (q in (0, 1]); AN_COLD when none.
 * Counting over the value range when the largest value is at most
 * 4n + 65536 (O(n + max value)), else sorting a copy (O(n log n)): memory
 * never follows a large value. */
int an_percentiles(const uint32_t *values, size_t n, const uint8_t *mask, const double *q, int nq,
                   uint32_t *out, rn_error *err);

#endif
