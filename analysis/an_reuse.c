/* an_reuse.c — stack distances (Fenwick tree with time compaction), reuse
 * times, log2 histograms and exact percentiles (an_reuse.h). */
#include "an_reuse.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Fenwick tree over positions 0..n-1 (1-based inside). */
static inline void fw_add(int32_t *t, uint32_t n, uint32_t i, int32_t v)
{
    for (i++; i <= n; i += i & -i) t[i] += v;
}
static inline int32_t fw_prefix(const int32_t *t, uint32_t i) /* sum of [0..i] */
{
    int32_t s = 0;
    for (i++; i > 0; i -= i & -i) s += t[i];
    return s;
}

int an_sd_init(an_sd *sd, uint32_t n_keys, rn_error *err)
{
    memset(sd, 0, sizeof *sd);
    uint32_t nk = n_keys ? n_keys : 1;
    sd->nk = nk;
    sd->F = 2 * nk + 64;                 /* time axis: >= F/2 steps between compactions */
    sd->fw = calloc((size_t)sd->F + 1, sizeof *sd->fw);
    sd->owner = malloc((size_t)sd->F * sizeof *sd->owner);
    sd->mark = calloc(sd->F, 1);
    sd->last = malloc((size_t)nk * sizeof *sd->last);
    if (!sd->fw || !sd->owner || !sd->mark || !sd->last) {
        an_sd_free(sd);
        return rn_seterr(err, RN_ENOMEM, "out of memory for stack distances over %u keys", nk);
    }
    for (uint32_t k = 0; k < nk; k++) sd->last[k] = AN_NONE;
    return RN_OK;
}

void an_sd_free(an_sd *sd)
{
    free(sd->fw); free(sd->owner); free(sd->mark); free(sd->last);
    memset(sd, 0, sizeof *sd);
}

void an_sd_feed(an_sd *sd, const uint32_t *key, size_t n, uint32_t *dist)
{
    int32_t *fw = sd->fw;
    uint32_t *owner = sd->owner, *last = sd->last, F = sd->F, t = sd->t;
    uint8_t *mark = sd->mark;
    int32_t live = sd->live;   /* marks set = distinct keys seen */
    for (size_t i = 0; i < n; i++) {
        uint32_t k = key[i], p = last[k];
        if (p == AN_NONE) {
            dist[i] = AN_COLD;
            live++;
        } else {
            dist[i] = (uint32_t)(live - fw_prefix(fw, p)) + 1;
            fw_add(fw, F, p, -1);
            mark[p] = 0;
        }
        if (t == F) { /* compact the marks to the front, in time order */
            uint32_t nt = 0;
            for (uint32_t q = 0; q < F; q++)
                if (mark[q]) {
                    mark[q] = 0;
                    owner[nt] = owner[q];
                    last[owner[nt]] = nt;
                    nt++;
                }
            memset(fw, 0, ((size_t)F + 1) * sizeof *fw);
            for (uint32_t q = 0; q < nt; q++) mark[q] = 1;
            for (uint32_t j = 1; j <= F; j++) { /* linear Fenwick build */
                if (j <= nt) fw[j] += 1;
                uint32_t up = j + (j & -j);
                if (up <= F) fw[up] += fw[j];
            }
            t = nt;
        }
        fw_add(fw, F, t, 1);
        mark[t] = 1;
        owner[t] = k;
        last[k] = t++;
    }
    sd->t = t;
    sd->live = live;
}

void an_sd_reset(an_sd *sd, const uint32_t *keys, size_t n)
{
    /* each seen key holds one mark, +1 in the tree: taking them off
     * leaves the tree all zeros, as an_sd_init made it */
    for (size_t i = 0; i < n; i++) {
        uint32_t p = sd->last[keys[i]];
        if (p == AN_NONE) continue;
        fw_add(sd->fw, sd->F, p, -1);
        sd->mark[p] = 0;
        sd->last[keys[i]] = AN_NONE;
    }
    sd->t = 0;
    sd->live = 0;
}

int an_stack_distances(const an_stream *s, uint32_t *dist, rn_error *err)
{
    an_sd sd;
    int rc = an_sd_init(&sd, s->n_keys, err);
    if (rc) return rc;
    an_sd_feed(&sd, s->key, s->n, dist);
    an_sd_free(&sd);
    return RN_OK;
}

int an_reuse_times(const an_stream *s, uint32_t *reuse, rn_error *err)
{
    if (!s->pos) return rn_seterr(err, RN_EINPUT, "reuse times need token positions");
    uint32_t nk = s->n_keys ? s->n_keys : 1;
    int32_t *lastpos = malloc((size_t)nk * sizeof *lastpos);
    if (!lastpos) return rn_seterr(err, RN_ENOMEM, "out of memory for reuse times");
    for (uint32_t k = 0; k < nk; k++) lastpos[k] = -1;
    for (size_t i = 0; i < s->n; i++) {
        uint32_t k = s->key[i];
        reuse[i] = lastpos[k] < 0 ? AN_COLD : (uint32_t)(s->pos[i] - lastpos[k]);
        lastpos[k] = s->pos[i];
    }
    free(lastpos);
    return RN_OK;
}

static inline int log2_bin(uint32_t v)
{
    return v == 0 ? 0 : 32 - __builtin_clz(v);
}

void an_hist_build(an_hist *h, const uint32_t *values, size_t n, const uint8_t *mask)
{
    memset(h, 0, sizeof *h);
    for (int b = 0; b < AN_HIST_BINS; b++) {
        h->lo[b] = b == 0 ? 0 : 1ull << (b - 1);
        h->hi[b] = b == 0 ? 0 : (1ull << b) - 1;
    }
    int top = 0;
    for (size_t i = 0; i < n; i++) {
        if (mask && !mask[i]) continue;
        if (values[i] == AN_COLD) { h->cold++; continue; }
        int b = log2_bin(values[i]);
        h->count[b]++;
        h->total++;
        if (b > top) top = b;
    }
    h->n_bins = h->total ? top + 1 : 0;
}

void an_hist_merge(an_hist *into, const an_hist *h)
{
    for (int b = 0; b < AN_HIST_BINS; b++) {
        into->lo[b] = h->lo[b];
        into->hi[b] = h->hi[b];
        into->count[b] += h->count[b];
    }
    if (h->n_bins > into->n_bins) into->n_bins = h->n_bins;
    into->total += h->total;
    into->cold += h->cold;
}

int an_reuse_hists(const an_streams *ss, an_hist out[2], rn_error *err)
{
    memset(out, 0, 2 * sizeof *out);
    size_t nmax = 0;
    for (int s = 0; s < ss->n; s++)
        if (ss->s[s].n > nmax) nmax = ss->s[s].n;
    uint32_t *val = malloc(sizeof *val * (nmax + 1));
    if (!val) return rn_seterr(err, RN_ENOMEM, "out of memory for %zu reuse values", nmax);
    int rc = RN_OK;
    for (int s = 0; s < ss->n && !rc; s++)
        for (int m = 0; m < 2 && !rc; m++) {
            rc = m == 0 ? an_reuse_times(&ss->s[s], val, err) : an_stack_distances(&ss->s[s], val, err);
            if (rc) break;
            an_hist h;
            an_hist_build(&h, val, ss->s[s].n, NULL);
            an_hist_merge(&out[m], &h);
        }
    free(val);
    return rc;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

int an_percentiles(const uint32_t *values, size_t n, const uint8_t *mask, const double *q, int nq,
                   uint32_t *out, rn_error *err)
{
    uint32_t mx = 0;
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        if ((!mask || mask[i]) && values[i] != AN_COLD) { total++; if (values[i] > mx) mx = values[i]; }
    for (int j = 0; j < nq; j++) out[j] = AN_COLD;
    if (!total) return RN_OK;
    /* A counting array costs O(max value): fine when the largest value is
     * small against the count (the usual case, and the fast one), but a
     * trace with positions near 2^31 has reuse times that large, so then
     * the values are sorted instead (memory O(n)).  Both give the smallest
     * v with at least ceil(q·total) values <= v. */
    if ((uint64_t)mx > 4 * total + 65536) {
        uint32_t *v = malloc(sizeof *v * total);
        if (!v) return rn_seterr(err, RN_ENOMEM, "out of memory for percentiles");
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if ((!mask || mask[i]) && values[i] != AN_COLD) v[k++] = values[i];
        qsort(v, total, sizeof *v, cmp_u32);
        for (int j = 0; j < nq; j++) {
            double need = ceil(q[j] * (double)total - 1e-9);
            uint64_t r = need < 1 ? 1 : need > (double)total ? total : (uint64_t)need;
            out[j] = v[r - 1];
        }
        free(v);
        return RN_OK;
    }
    uint64_t *cnt = calloc((size_t)mx + 1, sizeof *cnt);
    if (!cnt) return rn_seterr(err, RN_ENOMEM, "out of memory for percentiles");
    for (size_t i = 0; i < n; i++)
        if ((!mask || mask[i]) && values[i] != AN_COLD) cnt[values[i]]++;
    for (int j = 0; j < nq; j++) {
        double need = q[j] * (double)total;
        uint64_t acc = 0;
        for (uint32_t v = 0; v <= mx; v++) {
            acc += cnt[v];
            if ((double)acc >= need - 1e-9 && acc > 0) { out[j] = v; break; }
        }
    }
    free(cnt);
    return RN_OK;
}
