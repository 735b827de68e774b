/* an_slots.h — what each memory slot of one head holds (`ramtrace slots`).
 *
 * Runs the model over a token sequence up to position `at` with a probe on
 * head (layer, head), then, for every slot written so far, reports
 *   - the writes that made it: position, token, weight w, and the write's
 *     share of the slot's normaliser now, w·D/z, where D is the product of
 *     the decays (1 − w')^γ of the later writes to that slot (the shares and
 *     the prior's share (1/M)·D₀/z sum to 1; S[slot] = Σ w·D·v, so the share
 *     is also the write's weight in the slot's normalised value);
 *   - the state: |S[slot]| (L2) and z[slot];
 *   - the logit lens of the normalised value S[slot]/(z[slot] + ε) through
 *     the head's slice of o_proj, the final norm and the unembedding
 *     (core/nn/rn_lens.h): the top tokens it promotes.
 */
#ifndef AN_SLOTS_H
#define AN_SLOTS_H

#include <stdint.h>
#include <stdio.h>

#include "rn_error.h"
#include "rn_model.h"

typedef struct {
    int32_t pos;
    int token;
    int rank;                /* rank of the slot in that token's top-K writes */
    double w, share;
} an_slot_write;

typedef struct {
    uint32_t slot;
    double norm, z;          /* |S[slot]|, z[slot] at `at` */
    double prior_share;      /* (1/M)·D₀ / z: what is left of the initial state */
    size_t first, n_writes;  /* into an_slots.writes, by position */
    size_t top;              /* into an_slots.top_ids / top_logits (n_top each) */
} an_slot;

typedef struct {
    int layer, head, at, n_top;
    int64_t M;
    size_t n_slots, n_writes;
    an_slot *slots;          /* by slot number */
    an_slot_write *writes;
    int *top_ids;            /* [n_slots·n_top] promoted tokens, best first */
    float *top_logits;       /* their lens logits */
    int *tokens;             /* the input's first at+1 tokens */
    double seconds;          /* model and lens time */
} an_slots;

/* Compute for head (layer, head) of m over toks[0..n); at < 0 means the
 * last position, else at < n.  n_top >= 1 promoted tokens per slot
 * (at most V).  RN_EINPUT names the bad head or position. */
int an_slots_compute(const rn_model *m, const int *toks, int n, int layer, int head, int at,
                     int n_top, an_slots *out, rn_error *err);
void an_slots_free(an_slots *s);

/* Print in fmt (RN_FMT_*, core/base/rn_rows.h).  Table and CSV: one row per
 * slot; the writers (by share, at most max_writers in a table, all in CSV)
 * and the promoted tokens as text.  JSON: one object with every write and
 * promoted token as arrays. */
int an_slots_print(FILE *f, int fmt, const an_slots *s, const rn_config *cfg, int max_writers,
                   rn_error *err);

#endif
