/* an_overlap.h — do a pair's write and its query's read meet in memory?
 * (`ramtrace overlap`, docs/training.md "Top-K annealing").
 *
 * Given traced runs and, per run, pairs of positions (w, r) — w where a
 * key/value pair is written (MQAR: the value's position), r where it is
 * asked for (the query) — report per (layer, head):
 *   - slot usage, writes and reads separately: distinct slots touched over
 *     every run, the entropy (bits) of the accesses' weight mass over the
 *     slots, the mean entropy (bits) of a position's top-K weights
 *     normalised to sum 1 (log2 K: flat, 0: one slot), the mean weight of
 *     rank 0 and the mean sum of the top-K weights (the share of the full
 *     address distribution that the top-K keeps);
 *   - spread: per run, distinct slots among the pairs' writes over the sum
 *     of their sizes (1: no two pairs share a slot), averaged over the runs
 *     where at least 2 pairs have a write in the head (one pair alone
 *     would count as 1 and say nothing);
 *   - overlap: for the right pair, |W ∩ R| (W the top-K written at w, R
 *     the top-K read at r), whether it is ≥ 1, and the share of R's weight
 *     on slots of W; the same for every other pair of the run (W_j of pair
 *     j ≠ i against R_i) — what chance gives.
 * Random K-subsets of M slots share K²/M slots on average.
 */
#ifndef AN_OVERLAP_H
#define AN_OVERLAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rn_error.h"
#include "tr_reader.h"

typedef struct {
    int32_t wpos, rpos;
} an_pair;

/* One (layer, head)'s result; index [0] writes, [1] reads. */
typedef struct {
    int layer, head;
    int64_t positions[2];    /* positions with accesses of the op */
    int64_t distinct[2];     /* slots touched */
    double usage_entropy[2]; /* bits, of weight mass per slot */
    double addr_entropy[2];  /* bits, mean over positions */
    double top1[2], mass[2]; /* mean rank-0 weight, mean top-K sum */
    double spread;           /* mean over runs with >= 2 pairs; NaN if none */
    int64_t n_pairs, n_other;
    double overlap, hit, share;                   /* right pair, means */
    double other_overlap, other_hit, other_share; /* other pairs, means (NaN if none) */
} an_overlap_row;

/* Accumulator over runs of one model shape (fields private). */
typedef struct {
    int L, H;
    int64_t M;
    double *slot_mass;      /* [L·H·2·M] weight per slot */
    uint8_t *touched;       /* [L·H·2·M] */
    double *sum;            /* [L·H·S_N] running sums, see an_overlap.c */
    int64_t *idx;           /* scratch: per (layer, head, pos, op) first event, or -1 */
    int32_t *cnt;           /* scratch: its event count */
    size_t idx_cap;
    uint8_t *mark;          /* scratch [M] */
} an_overlap;

int an_overlap_init(an_overlap *a, int L, int H, int64_t M, rn_error *err);
void an_overlap_free(an_overlap *a);

/* Add one run: its events ev[0..n) in canonical order (layer, head, pos,
 * op, rank; tr_load_events) and its pairs.  A pair whose w has no write or
 * r no read in a (layer, head) counts for none of its columns there.
 * RN_EINPUT if an event's layer, head or slot is outside the shape. */
int an_overlap_add(an_overlap *a, const tr_event *ev, size_t n, const an_pair *pairs, size_t np,
                   rn_error *err);

/* The L·H rows, by (layer, head). */
void an_overlap_rows(const an_overlap *a, an_overlap_row *rows);

/* Read a pairs file: lines "RUN WPOS RPOS", RUN a run's name or, as #ID
 * (# then digits), its id; blank lines and other lines starting with #
 * (comments) are skipped.  *names[i] points into
 * *buf (free both).  RN_EINPUT with the file and line on a bad line. */
int an_pairs_read(const char *path, char **buf, char ***names, an_pair **pairs, size_t *n, rn_error *err);

/* The whole command: every run of the trace at path that the pairs file
 * names (RN_EINPUT for a name that no run has), all of one model shape.
 * *rows (malloc'd) gets L·H rows. */
int an_overlap_file(const char *path, const char *pairs_path, an_overlap_row **rows, int *n_rows,
                    rn_error *err);

/* Print rows in fmt (RN_FMT_*, core/base/rn_rows.h), one per (layer, head). */
int an_overlap_print(FILE *f, int fmt, const an_overlap_row *rows, int n, rn_error *err);

#endif
