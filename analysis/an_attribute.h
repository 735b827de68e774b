/* an_attribute.h — attribution of a head's reads to earlier tokens' writes,
 * computed from the trace alone (slots, weights, γ, ε, M).
 *
 * PDMA (DESIGN.md §2) is linear in the values: for one head, after the
 * writes of step T, slot s holds
 *   S_T[s] = Σ_{t' ≤ T writes s} w_{t',s} · D(t', T, s) · v_{t'},
 *   z_T[s] = (1/M)·D(−1, T, s) + Σ_{t'} w_{t',s} · D(t', T, s),
 * with D(t', T, s) = Π_{t' < u ≤ T, u writes s} (1 − w_{u,s})^γ (0⁰ = 1).
 * So the read o_T = Σ_{(s, r) read at T} r·S_T[s]/(z_T[s] + ε) equals
 * Σ_{t'} c_{T,t'}·v_{t'} with
 *   c_{T,t'} = Σ_s r_s · w_{t',s} · D(t', T, s) / (z_T[s] + ε).
 * Each term (t', s) is one write's effective weight in the read.
 */
#ifndef AN_ATTRIBUTE_H
#define AN_ATTRIBUTE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rn_error.h"
#include "tr_reader.h"

/* One write's share of one read: token t' wrote slot s with weight w; T
 * read s (rank read_rank) with weight r; decay is D(t', T, s); z the
 * normaliser z_T[s]; coef = r·w·decay/(z + ε). */
typedef struct {
    int32_t pos;          /* t', the writing token */
    uint32_t slot;
    int read_rank;
    double w, r, decay, z, coef;
} an_attr_term;

/* Per writing token: c_{T,t'} (sum of its terms). */
typedef struct {
    int32_t pos;
    double coef;
} an_attr_token;

typedef struct {
    int32_t pos;              /* T */
    size_t n_terms;
    an_attr_term *terms;      /* by (read rank, t' descending) */
    size_t n_tokens;
    an_attr_token *tokens;    /* by t' ascending, only tokens with a term */
    double total;             /* Σ coef (≤ Σ r: the rest is the 1/M prior) */
} an_attribution;

/* A token × token matrix for plots: values[i·n + j] = c_{pos[i], pos[j]}
 * (row i reads, column j wrote; zero where j > i). */
typedef struct {
    int64_t n;
    int32_t *pos;             /* [n] positions of rows / columns */
    double *values;           /* [n·n] */
} an_matrix;

/* Events of ONE head (any order; other heads are RN_EINPUT) of a run with
 * slot count M, power gamma and epsilon eps.  Attribute the read at
 * position T; RN_EINPUT when T has no reads. */
int an_attribute_read(const tr_event *ev, size_t n, int64_t M, double gamma, double eps, int32_t T,
                      an_attribution *out, rn_error *err);
void an_attribution_free(an_attribution *a);

/* The whole head's matrix over its traced positions (at most max_n
 * positions, else RN_EINPUT naming the limit).  RN_EINTR (nothing kept)
 * once the stop flag is raised (an_stop.h). */
int an_attribute_matrix(const tr_event *ev, size_t n, int64_t M, double gamma, double eps,
                        int64_t max_n, an_matrix *out, rn_error *err);
/* The same restricted to the positions in [lo, hi): rows are the reads at
 * those positions, columns the writes there; earlier writes still decay
 * and normalise the reads but take no column (max_n counts the window). */
int an_attribute_matrix_range(const tr_event *ev, size_t n, int64_t M, double gamma, double eps,
                              int64_t lo, int64_t hi, int64_t max_n, an_matrix *out, rn_error *err);
void an_matrix_free(an_matrix *m);

/* Print a read's writing tokens, largest |coef| first (sorts a->tokens),
 * at most top of them (0 = all), in fmt (RN_FMT_*, core/base/rn_rows.h):
 * table (a heading line, then pos, coef, share %, token), CSV (pos, coef,
 * share, piece; %.6g, pieces always quoted) or JSON ({"layer", "head",
 * "pos", "total", "tokens": [{pos, coef, share}]}).  toks (sorted by pos)
 * give the pieces.  RN_EIO when writing fails. */
int an_attribution_print(FILE *f, int fmt, an_attribution *a, int layer, int head, const tr_token *toks,
                         int64_t nt, int64_t top, rn_error *err);
/* Every term as CSV: pos,slot,read_rank,w,r,decay,z,coef (--detail). */
int an_attribution_print_terms(FILE *f, const an_attribution *a, rn_error *err);
/* The matrix as CSV: a "pos" column then one column per writing position
 * (--matrix). */
int an_matrix_print_csv(FILE *f, const an_matrix *m, rn_error *err);

#endif
