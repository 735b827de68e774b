/* an_stats.c — per-head memory-use statistics and their printing
 * (an_stats.h) through the row writer (core/base/rn_rows.h). */
#include "an_stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "an_reuse.h"
#include "rn_rows.h"

static int cmp_desc_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x < y) - (x > y);
}

/* The most common delta and its share, ties as an_stats_shift_beats:
 * counts by open addressing over the deltas. */
static void delta_mode(const int64_t *d, size_t n, int64_t *mode, double *share)
{
    *mode = 0;
    *share = 0;
    if (!n) return;
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    int64_t *key = malloc(cap * sizeof *key);
    uint64_t *cnt = calloc(cap, sizeof *cnt);
    if (!key || !cnt) { free(key); free(cnt); return; }
    uint64_t best = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t h = (uint64_t)d[i] * 0x9E3779B97F4A7C15ULL;
        size_t j = (size_t)(h >> 20) & (cap - 1);
        while (cnt[j] && key[j] != d[i]) j = (j + 1) & (cap - 1);
        key[j] = d[i];
        if (an_stats_shift_beats(d[i], ++cnt[j], *mode, best)) {
            best = cnt[j];
            *mode = d[i];
        }
    }
    *share = (double)best / (double)n;
    free(key); free(cnt);
}

int an_stats_head(const an_stream *s, int64_t M, int cape, int window, an_head_stats *o, rn_error *err)
{
    memset(o, 0, sizeof *o);
    o->layer = s->layer;
    o->head = s->head;
    o->cape = cape;
    o->events = s->n;
    o->reuse_p50 = o->reuse_p90 = o->sd_p50 = o->sd_p90 = AN_COLD;
    if (!s->n) return RN_OK;
    uint32_t nk = s->n_keys;
    uint64_t *cnt = calloc(nk, sizeof *cnt);
    uint8_t *written = calloc(nk, 1);
    int32_t *lastwin = malloc(nk * sizeof *lastwin);
    uint32_t *val = malloc(s->n * sizeof *val);
    int64_t *delta = malloc(s->n * sizeof *delta);
    /* previous position's slot per (op, rank); ranks beyond 1024 ignored */
    int32_t *prevpos = malloc(2 * RN_MAX_TOPK * sizeof *prevpos);
    uint32_t *prevslot = malloc(2 * RN_MAX_TOPK * sizeof *prevslot);
    int rc = RN_OK;
    if (!cnt || !written || !lastwin || !val || !delta || !prevpos || !prevslot) {
        rc = rn_seterr(err, RN_ENOMEM, "out of memory for head statistics");
        goto done;
    }
    for (uint32_t k = 0; k < nk; k++) lastwin[k] = -1;
    for (int i = 0; i < 2 * RN_MAX_TOPK; i++) prevpos[i] = -2;
    size_t nd = 0;
    uint64_t ws_sum = 0;
    int64_t nwin = 0;
    int rank = 0;
    for (size_t i = 0; i < s->n; i++) {
        uint32_t k = s->key[i];
        int op = s->op[i];
        cnt[k]++;
        if (op == RN_OP_WRITE) { o->writes++; written[k] = 1; }
        else { o->reads++; if (written[k]) o->warm_reads++; else o->cold_reads++; }
        rank = (i > 0 && s->pos[i] == s->pos[i - 1] && s->op[i] == s->op[i - 1]) ? rank + 1 : 0;
        if (rank < RN_MAX_TOPK) {
            int j = op * RN_MAX_TOPK + rank;
            uint32_t slot = an_id_slot(s->id[k]);
            if (prevpos[j] == s->pos[i] - 1) {
                int64_t d = ((int64_t)slot - (int64_t)prevslot[j]) % M;
                if (d < 0) d += M;
                if (d > M / 2) d -= M;
                delta[nd++] = d;
            }
            prevpos[j] = s->pos[i];
            prevslot[j] = slot;
        }
        int32_t w = s->pos[i] / window;
        if (w >= nwin) nwin = (int64_t)w + 1; /* w may be INT32_MAX (window 1) */
        if (lastwin[k] != w) { lastwin[k] = w; ws_sum++; }
    }
    o->distinct = nk;
    o->used_share = (double)nk / (double)M;
    o->ws_mean = nwin ? (double)ws_sum / (double)nwin : 0;
    double H = 0;
    for (uint32_t k = 0; k < nk; k++) {
        double p = (double)cnt[k] / (double)s->n;
        H -= p * log2(p);
    }
    o->entropy = H;
    o->entropy_norm = M > 1 ? H / log2((double)M) : 0;
    qsort(cnt, nk, sizeof *cnt, cmp_desc_u64);
    uint64_t hot = 0, nh = (uint64_t)((M + 99) / 100);
    for (uint32_t k = 0; k < nk && k < nh; k++) hot += cnt[k];
    o->hot_share = (double)hot / (double)s->n;
    delta_mode(delta, nd, &o->delta, &o->delta_share);
    const double q[2] = { 0.5, 0.9 };
    uint32_t pc[2];
    if ((rc = an_reuse_times(s, val, err))) goto done;
    if ((rc = an_percentiles(val, s->n, NULL, q, 2, pc, err))) goto done;
    o->reuse_p50 = pc[0]; o->reuse_p90 = pc[1];
    if ((rc = an_stack_distances(s, val, err))) goto done;
    if ((rc = an_percentiles(val, s->n, NULL, q, 2, pc, err))) goto done;
    o->sd_p50 = pc[0]; o->sd_p90 = pc[1];
done:
    free(cnt); free(written); free(lastwin); free(val); free(delta); free(prevpos); free(prevslot);
    return rc;
}

void an_stats_summarise(const an_head_stats *h, int n, int want_cape, an_stats_summary *o)
{
    memset(o, 0, sizeof *o);
    for (int i = 0; i < n; i++) {
        if (want_cape >= 0 && h[i].cape != want_cape) continue;
        o->heads++;
        o->events += h[i].events; o->reads += h[i].reads;
        o->warm_reads += h[i].warm_reads; o->cold_reads += h[i].cold_reads;
        o->used_share += h[i].used_share; o->entropy += h[i].entropy;
        o->entropy_norm += h[i].entropy_norm; o->hot_share += h[i].hot_share;
        o->ws_mean += h[i].ws_mean; o->delta_share += h[i].delta_share;
    }
    if (o->heads) {
        double k = o->heads;
        o->used_share /= k; o->entropy /= k; o->entropy_norm /= k; o->hot_share /= k;
        o->ws_mean /= k; o->delta_share /= k;
    }
}

/* A percentile cell: "-" (null in JSON) when there was none. */
static rn_cell pct(uint32_t v) { return v == AN_COLD ? rn_cell_null("-") : rn_cell_uint(v); }

static double warm_pct(uint64_t warm, uint64_t reads)
{
    return reads ? 100.0 * (double)warm / (double)reads : 0.0;
}

/* The per-head rows as CSV and JSON print them (cape 0/1 in CSV, a boolean
 * in JSON; shares %.6g). */
static void print_heads_data(rn_rows *w, const an_head_stats *h, int n, int json)
{
    for (int i = 0; i < n; i++) {
        const an_head_stats *s = &h[i];
        const rn_cell c[20] = {
            rn_cell_int(s->layer), rn_cell_int(s->head), json ? rn_cell_bool(s->cape) : rn_cell_int(s->cape),
            rn_cell_uint(s->events), rn_cell_uint(s->writes), rn_cell_uint(s->reads),
            rn_cell_uint(s->distinct), rn_cell_real(s->used_share, "%.6g"),
            rn_cell_real(s->entropy, "%.6g"), rn_cell_real(s->entropy_norm, "%.6g"),
            rn_cell_real(s->hot_share, "%.6g"), rn_cell_uint(s->warm_reads), rn_cell_uint(s->cold_reads),
            pct(s->reuse_p50), pct(s->reuse_p90), pct(s->sd_p50), pct(s->sd_p90), rn_cell_int(s->delta),
            rn_cell_real(s->delta_share, "%.6g"), rn_cell_real(s->ws_mean, "%.6g") };
        if (rn_rows_add(w, c)) break;
    }
}

int an_stats_print(FILE *f, int fmt, const an_head_stats *h, int n, int64_t M, int window, rn_error *err)
{
    an_stats_summary sum[3];
    const char *names[3] = { "cape", "non-cape", "all" };
    an_stats_summarise(h, n, 1, &sum[0]);
    an_stats_summarise(h, n, 0, &sum[1]);
    an_stats_summarise(h, n, -1, &sum[2]);
    rn_rows w;
    int rc;
    if (fmt != RN_FMT_TABLE) {
        static const char *const cols[20] = {
            "layer", "head", "cape", "events", "writes", "reads", "distinct", "used_share",
            "entropy_bits", "entropy_norm", "hot1_share", "warm_reads", "cold_reads", "reuse_p50",
            "reuse_p90", "sd_p50", "sd_p90", "delta", "delta_share", "ws_mean" };
        const rn_rows_opts embed = { .json_embed = 1 };
        if (fmt == RN_FMT_JSON) fprintf(f, "{\"slots\": %lld, \"window\": %d, \"heads\": ", (long long)M, window);
        if ((rc = rn_rows_begin(&w, f, fmt, 20, cols, &embed, err))) return rc;
        print_heads_data(&w, h, n, fmt == RN_FMT_JSON);
        if ((rc = rn_rows_end(&w, err)) || fmt == RN_FMT_CSV) return rc;
        /* JSON: the summaries keyed by group. */
        static const char *const scols[12] = {
            "group", "heads", "events", "reads", "warm_reads", "cold_reads", "used_share",
            "entropy_bits", "entropy_norm", "hot1_share", "delta_share", "ws_mean" };
        const rn_rows_opts keyed = { .json_embed = 1, .json_keyed = 1 };
        fprintf(f, ", \"summary\": ");
        if ((rc = rn_rows_begin(&w, f, fmt, 12, scols, &keyed, err))) return rc;
        for (int g = 0; g < 3; g++) {
            const an_stats_summary *m = &sum[g];
            const rn_cell c[12] = {
                rn_cell_text(names[g]), rn_cell_int(m->heads), rn_cell_uint(m->events),
                rn_cell_uint(m->reads), rn_cell_uint(m->warm_reads), rn_cell_uint(m->cold_reads),
                rn_cell_real(m->used_share, "%.6g"), rn_cell_real(m->entropy, "%.6g"),
                rn_cell_real(m->entropy_norm, "%.6g"), rn_cell_real(m->hot_share, "%.6g"),
                rn_cell_real(m->delta_share, "%.6g"), rn_cell_real(m->ws_mean, "%.6g") };
            rn_rows_add(&w, c);
        }
        if ((rc = rn_rows_end(&w, err))) return rc;
        fprintf(f, "}\n");
        return ferror(f) ? rn_seterr(err, RN_EIO, "writing the output failed") : RN_OK;
    }
    /* Table: percentages and the short headers. */
    static const char *const tcols[15] = {
        "layer", "head", "cape", "events", "distinct", "used%", "H(bits)", "hot1%", "warm%",
        "cold_reads", "reuse50", "sd50/90", "delta", "d%", "ws" };
    if ((rc = rn_rows_begin(&w, f, fmt, 15, tcols, NULL, err))) return rc;
    for (int i = 0; i < n; i++) {
        const an_head_stats *s = &h[i];
        char sd[32], a[2][12];
        for (int j = 0; j < 2; j++) {
            uint32_t v = j ? s->sd_p90 : s->sd_p50;
            if (v == AN_COLD) snprintf(a[j], sizeof a[j], "-");
            else snprintf(a[j], sizeof a[j], "%u", v);
        }
        snprintf(sd, sizeof sd, "%s/%s", a[0], a[1]);
        const rn_cell c[15] = {
            rn_cell_int(s->layer), rn_cell_int(s->head), rn_cell_text(s->cape ? "yes" : "no"),
            rn_cell_uint(s->events), rn_cell_uint(s->distinct), rn_cell_real(100 * s->used_share, "%.2f"),
            rn_cell_real(s->entropy, "%.2f"), rn_cell_real(100 * s->hot_share, "%.1f"),
            rn_cell_real(warm_pct(s->warm_reads, s->reads), "%.1f"), rn_cell_uint(s->cold_reads),
            pct(s->reuse_p50), rn_cell_text(sd), rn_cell_int(s->delta),
            rn_cell_real(100 * s->delta_share, "%.1f"), rn_cell_real(s->ws_mean, "%.1f") };
        if (rn_rows_add(&w, c)) break;
    }
    if ((rc = rn_rows_end(&w, err))) return rc;
    static const char *const scols[9] = { "summary", "heads", "events", "used%", "H(bits)", "hot1%",
                                          "warm%", "d%", "ws" };
    fputc('\n', f);
    if ((rc = rn_rows_begin(&w, f, fmt, 9, scols, NULL, err))) return rc;
    for (int g = 0; g < 3; g++) {
        const an_stats_summary *m = &sum[g];
        const rn_cell c[9] = {
            rn_cell_text(names[g]), rn_cell_int(m->heads), rn_cell_uint(m->events),
            rn_cell_real(100 * m->used_share, "%.2f"), rn_cell_real(m->entropy, "%.2f"),
            rn_cell_real(100 * m->hot_share, "%.1f"), rn_cell_real(warm_pct(m->warm_reads, m->reads), "%.1f"),
            rn_cell_real(100 * m->delta_share, "%.1f"), rn_cell_real(m->ws_mean, "%.1f") };
        rn_rows_add(&w, c);
    }
    if ((rc = rn_rows_end(&w, err))) return rc;
    fprintf(f, "(M = %lld slots; hot1 = the %lld hottest slots; ws = distinct slots per %d tokens; "
               "delta = most common slot shift between consecutive tokens)\n",
            (long long)M, (long long)((M + 99) / 100), window);
    return ferror(f) ? rn_seterr(err, RN_EIO, "writing the output failed") : RN_OK;
}
