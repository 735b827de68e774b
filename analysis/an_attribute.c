/* an_attribute.c — read-to-write attribution from a head's trace
 * (an_attribute.h).  The head's writes are sorted by (slot, pos); a read of
 * slot s at T walks s's writes backwards from T, multiplying the decays, so
 * the cost is the number of writes to s up to T. */
#include "an_attribute.h"
#include "an_stop.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint32_t slot;
    int32_t pos;
    double w;
} wr;

static int cmp_wr(const void *a, const void *b)
{
    const wr *x = a, *y = b;
    if (x->slot != y->slot) return x->slot < y->slot ? -1 : 1;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

/* Sorted writes of one head; RN_EINPUT if events span several heads. */
static int collect_writes(const tr_event *ev, size_t n, wr **out, size_t *nw, rn_error *err)
{
    *out = NULL;
    *nw = 0;
    size_t c = 0;
    for (size_t i = 0; i < n; i++) {
        if (ev[i].layer != ev[0].layer || ev[i].head != ev[0].head)
            return rn_seterr(err, RN_EINPUT, "attribution needs the events of one head");
        c += ev[i].op == RN_OP_WRITE;
    }
    wr *w = malloc((c ? c : 1) * sizeof *w);
    if (!w) return rn_seterr(err, RN_ENOMEM, "out of memory for %zu writes", c);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (ev[i].op == RN_OP_WRITE) { w[k].slot = ev[i].slot; w[k].pos = ev[i].pos; w[k].w = ev[i].weight; k++; }
    qsort(w, k, sizeof *w, cmp_wr);
    *out = w;
    *nw = k;
    return RN_OK;
}

/* [lo, hi): the writes to slot s at positions <= T. */
static void write_range(const wr *w, size_t nw, uint32_t s, int32_t T, size_t *lo, size_t *hi)
{
    size_t a = 0, b = nw;
    while (a < b) { size_t m = (a + b) / 2; if (w[m].slot < s) a = m + 1; else b = m; }
    *lo = a;
    b = nw;
    while (a < b) {
        size_t m = (a + b) / 2;
        if (w[m].slot < s || (w[m].slot == s && w[m].pos <= T)) a = m + 1; else b = m;
    }
    *hi = a;
}

/* z_T[s] of the writes w[lo..hi) (all to s, ascending pos). */
static double normaliser(const wr *w, size_t lo, size_t hi, int64_t M, double gamma)
{
    double P = 1.0, sum = 0.0;
    for (size_t j = hi; j-- > lo;) {
        sum += w[j].w * P;
        P *= pow(1.0 - w[j].w, gamma);
    }
    return P / (double)M + sum;
}

void an_attribution_free(an_attribution *a)
{
    if (!a) return;
    free(a->terms); free(a->tokens);
    memset(a, 0, sizeof *a);
}

static int cmp_tok(const void *a, const void *b)
{
    const an_attr_token *x = a, *y = b;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

int an_attribute_read(const tr_event *ev, size_t n, int64_t M, double gamma, double eps, int32_t T,
                      an_attribution *out, rn_error *err)
{
    memset(out, 0, sizeof *out);
    out->pos = T;
    wr *w;
    size_t nw;
    int rc = collect_writes(ev, n, &w, &nw, err);
    if (rc) return rc;
    size_t nterms = 0, nreads = 0;
    for (size_t i = 0; i < n; i++) {
        if (ev[i].op != RN_OP_READ || ev[i].pos != T) continue;
        nreads++;
        size_t lo, hi;
        write_range(w, nw, ev[i].slot, T, &lo, &hi);
        nterms += hi - lo;
    }
    if (!nreads) {
        free(w);
        return rn_seterr(err, RN_EINPUT, "--pos: position %d has no traced reads", (int)T);
    }
    out->terms = malloc((nterms ? nterms : 1) * sizeof *out->terms);
    out->tokens = malloc((nterms ? nterms : 1) * sizeof *out->tokens);
    if (!out->terms || !out->tokens) {
        free(w); an_attribution_free(out);
        return rn_seterr(err, RN_ENOMEM, "out of memory for %zu attribution terms", nterms);
    }
    for (size_t i = 0; i < n; i++) {
        if (ev[i].op != RN_OP_READ || ev[i].pos != T) continue;
        size_t lo, hi;
        write_range(w, nw, ev[i].slot, T, &lo, &hi);
        double z = normaliser(w, lo, hi, M, gamma), r = ev[i].weight, P = 1.0;
        for (size_t j = hi; j-- > lo;) {
            an_attr_term *t = &out->terms[out->n_terms++];
            t->pos = w[j].pos;
            t->slot = w[j].slot;
            t->read_rank = ev[i].rank;
            t->w = w[j].w;
            t->r = r;
            t->decay = P;
            t->z = z;
            t->coef = r * w[j].w * P / (z + eps);
            out->total += t->coef;
            P *= pow(1.0 - w[j].w, gamma);
        }
    }
    /* per-token sums */
    for (size_t j = 0; j < out->n_terms; j++) {
        out->tokens[j].pos = out->terms[j].pos;
        out->tokens[j].coef = out->terms[j].coef;
    }
    qsort(out->tokens, out->n_terms, sizeof *out->tokens, cmp_tok);
    size_t k = 0;
    for (size_t j = 0; j < out->n_terms; j++) {
        if (k && out->tokens[k - 1].pos == out->tokens[j].pos) out->tokens[k - 1].coef += out->tokens[j].coef;
        else out->tokens[k++] = out->tokens[j];
    }
    out->n_tokens = k;
    free(w);
    return RN_OK;
}

void an_matrix_free(an_matrix *m)
{
    if (!m) return;
    free(m->pos); free(m->values);
    memset(m, 0, sizeof *m);
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static int64_t index_of(const int32_t *pos, int64_t n, int32_t p)
{
    int64_t a = 0, b = n;
    while (a < b) { int64_t m = (a + b) / 2; if (pos[m] < p) a = m + 1; else b = m; }
    return a;
}

int an_attribute_matrix(const tr_event *ev, size_t n, int64_t M, double gamma, double eps,
                        int64_t max_n, an_matrix *out, rn_error *err)
{
    return an_attribute_matrix_range(ev, n, M, gamma, eps, INT64_MIN, INT64_MAX, max_n, out, err);
}

int an_attribute_matrix_range(const tr_event *ev, size_t n, int64_t M, double gamma, double eps,
                              int64_t lo, int64_t hi, int64_t max_n, an_matrix *out, rn_error *err)
{
    memset(out, 0, sizeof *out);
    wr *w;
    size_t nw;
    int rc = collect_writes(ev, n, &w, &nw, err);
    if (rc) return rc;
    int32_t *pos = malloc((n ? n : 1) * sizeof *pos);
    if (!pos) { free(w); return rn_seterr(err, RN_ENOMEM, "out of memory"); }
    size_t nin = 0;
    for (size_t i = 0; i < n; i++)
        if (ev[i].pos >= lo && ev[i].pos < hi) pos[nin++] = ev[i].pos;
    qsort(pos, nin, sizeof *pos, cmp_i32);
    int64_t np = 0;
    for (size_t i = 0; i < nin; i++) if (!np || pos[np - 1] != pos[i]) pos[np++] = pos[i];
    if (np > max_n) {
        free(w); free(pos);
        return rn_seterr(err, RN_EINPUT, "the head has %lld traced positions, more than the matrix "
                         "limit %lld (--max-tokens)", (long long)np, (long long)max_n);
    }
    out->n = np;
    out->pos = pos;
    out->values = calloc((size_t)(np ? np * np : 1), sizeof *out->values);
    if (!out->values) {
        free(w); an_matrix_free(out);
        return rn_seterr(err, RN_ENOMEM, "out of memory for a %lld x %lld matrix", (long long)np, (long long)np);
    }
    for (size_t i = 0; i < n; i++) {
        if ((i & 4095) == 0 && an_stopped()) { /* Ctrl-C: the work is quadratic */
            free(w); an_matrix_free(out);
            return rn_seterr(err, RN_EINTR, "attribute: interrupted");
        }
        if (ev[i].op != RN_OP_READ || ev[i].pos < lo || ev[i].pos >= hi) continue;
        int32_t T = ev[i].pos;
        int64_t row = index_of(pos, np, T);
        size_t wlo, whi;
        write_range(w, nw, ev[i].slot, T, &wlo, &whi);
        double z = normaliser(w, wlo, whi, M, gamma), r = ev[i].weight, P = 1.0;
        for (size_t j = whi; j-- > wlo && w[j].pos >= lo;) {
            out->values[row * np + index_of(pos, np, w[j].pos)] += r * w[j].w * P / (z + eps);
            P *= pow(1.0 - w[j].w, gamma);
        }
    }
    free(w);
    return RN_OK;
}
