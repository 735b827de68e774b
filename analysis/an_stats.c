/* an_stats.c — per-head memory-use statistics and their printing
 * (an_stats.h). */
#include "an_stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "an_reuse.h"

int an_format_parse(const char *s, int *fmt, rn_error *err)
{
    if (!strcmp(s, "table")) *fmt = AN_FMT_TABLE;
    else if (!strcmp(s, "csv")) *fmt = AN_FMT_CSV;
    else if (!strcmp(s, "json")) *fmt = AN_FMT_JSON;
    else return rn_seterr(err, RN_EINPUT, "--format: unknown format '%s' (table, csv or json)", s);
    return RN_OK;
}

static int cmp_desc_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x < y) - (x > y);
}

/* Count of the most common delta: open addressing over (delta + M). */
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
        if (++cnt[j] > best || (cnt[j] == best && llabs(d[i]) < llabs(*mode))) {
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
        if (op == 0) { o->writes++; written[k] = 1; }
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
        if (w >= nwin) nwin = w + 1;
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

static void pct(char *buf, size_t cap, uint32_t v)
{
    if (v == AN_COLD) snprintf(buf, cap, "-");
    else snprintf(buf, cap, "%u", v);
}

void an_stats_print(FILE *f, int fmt, const an_head_stats *h, int n, int64_t M, int window)
{
    an_stats_summary sum[3];
    const char *names[3] = { "cape", "non-cape", "all" };
    an_stats_summarise(h, n, 1, &sum[0]);
    an_stats_summarise(h, n, 0, &sum[1]);
    an_stats_summarise(h, n, -1, &sum[2]);
    char a[4][16];
    if (fmt == AN_FMT_CSV) {
        fprintf(f, "layer,head,cape,events,writes,reads,distinct,used_share,entropy_bits,entropy_norm,"
                   "hot1_share,warm_reads,cold_reads,reuse_p50,reuse_p90,sd_p50,sd_p90,delta,"
                   "delta_share,ws_mean\n");
        for (int i = 0; i < n; i++) {
            const an_head_stats *s = &h[i];
            pct(a[0], 16, s->reuse_p50); pct(a[1], 16, s->reuse_p90);
            pct(a[2], 16, s->sd_p50); pct(a[3], 16, s->sd_p90);
            fprintf(f, "%d,%d,%d,%llu,%llu,%llu,%llu,%.6g,%.6g,%.6g,%.6g,%llu,%llu,%s,%s,%s,%s,%lld,%.6g,%.6g\n",
                    s->layer, s->head, s->cape, (unsigned long long)s->events,
                    (unsigned long long)s->writes, (unsigned long long)s->reads,
                    (unsigned long long)s->distinct, s->used_share, s->entropy, s->entropy_norm,
                    s->hot_share, (unsigned long long)s->warm_reads, (unsigned long long)s->cold_reads,
                    a[0], a[1], a[2], a[3], (long long)s->delta, s->delta_share, s->ws_mean);
        }
        return;
    }
    if (fmt == AN_FMT_JSON) {
        fprintf(f, "{\"slots\": %lld, \"window\": %d, \"heads\": [", (long long)M, window);
        for (int i = 0; i < n; i++) {
            const an_head_stats *s = &h[i];
            pct(a[0], 16, s->reuse_p50); pct(a[1], 16, s->reuse_p90);
            pct(a[2], 16, s->sd_p50); pct(a[3], 16, s->sd_p90);
            for (int j = 0; j < 4; j++) if (a[j][0] == '-') strcpy(a[j], "null");
            fprintf(f, "%s\n  {\"layer\": %d, \"head\": %d, \"cape\": %s, \"events\": %llu, \"writes\": %llu, "
                       "\"reads\": %llu, \"distinct\": %llu, \"used_share\": %.6g, \"entropy_bits\": %.6g, "
                       "\"entropy_norm\": %.6g, \"hot1_share\": %.6g, \"warm_reads\": %llu, "
                       "\"cold_reads\": %llu, \"reuse_p50\": %s, \"reuse_p90\": %s, \"sd_p50\": %s, "
                       "\"sd_p90\": %s, \"delta\": %lld, \"delta_share\": %.6g, \"ws_mean\": %.6g}",
                    i ? "," : "", s->layer, s->head, s->cape ? "true" : "false",
                    (unsigned long long)s->events, (unsigned long long)s->writes,
                    (unsigned long long)s->reads, (unsigned long long)s->distinct, s->used_share,
                    s->entropy, s->entropy_norm, s->hot_share, (unsigned long long)s->warm_reads,
                    (unsigned long long)s->cold_reads, a[0], a[1], a[2], a[3], (long long)s->delta,
                    s->delta_share, s->ws_mean);
        }
        fprintf(f, "\n], \"summary\": {");
        for (int g = 0; g < 3; g++)
            fprintf(f, "%s\n  \"%s\": {\"heads\": %d, \"events\": %llu, \"reads\": %llu, \"warm_reads\": %llu, "
                       "\"cold_reads\": %llu, \"used_share\": %.6g, \"entropy_bits\": %.6g, "
                       "\"entropy_norm\": %.6g, \"hot1_share\": %.6g, \"delta_share\": %.6g, \"ws_mean\": %.6g}",
                    g ? "," : "", names[g], sum[g].heads, (unsigned long long)sum[g].events,
                    (unsigned long long)sum[g].reads, (unsigned long long)sum[g].warm_reads,
                    (unsigned long long)sum[g].cold_reads, sum[g].used_share, sum[g].entropy,
                    sum[g].entropy_norm, sum[g].hot_share, sum[g].delta_share, sum[g].ws_mean);
        fprintf(f, "\n}}\n");
        return;
    }
    fprintf(f, "%5s %4s %4s %10s %9s %7s %7s %6s %6s %10s %9s %9s %6s %6s %6s\n", "layer", "head", "cape",
            "events", "distinct", "used%", "H(bits)", "hot1%", "warm%", "cold_reads", "reuse50",
            "sd50/90", "delta", "d%", "ws");
    for (int i = 0; i < n; i++) {
        const an_head_stats *s = &h[i];
        char sd[32];
        pct(a[0], 16, s->reuse_p50); pct(a[2], 16, s->sd_p50); pct(a[3], 16, s->sd_p90);
        snprintf(sd, sizeof sd, "%s/%s", a[2], a[3]);
        fprintf(f, "%5d %4d %4s %10llu %9llu %7.2f %7.2f %6.1f %6.1f %10llu %9s %9s %6lld %6.1f %6.1f\n",
                s->layer, s->head, s->cape ? "yes" : "no", (unsigned long long)s->events,
                (unsigned long long)s->distinct, 100 * s->used_share, s->entropy, 100 * s->hot_share,
                s->reads ? 100.0 * (double)s->warm_reads / (double)s->reads : 0.0,
                (unsigned long long)s->cold_reads, a[0], sd, (long long)s->delta,
                100 * s->delta_share, s->ws_mean);
    }
    fprintf(f, "\n%-9s %5s %12s %7s %7s %6s %6s %6s %8s\n", "summary", "heads", "events", "used%",
            "H(bits)", "hot1%", "warm%", "d%", "ws");
    for (int g = 0; g < 3; g++)
        fprintf(f, "%-9s %5d %12llu %7.2f %7.2f %6.1f %6.1f %6.1f %8.1f\n", names[g], sum[g].heads,
                (unsigned long long)sum[g].events, 100 * sum[g].used_share, sum[g].entropy,
                100 * sum[g].hot_share,
                sum[g].reads ? 100.0 * (double)sum[g].warm_reads / (double)sum[g].reads : 0.0,
                100 * sum[g].delta_share, sum[g].ws_mean);
    fprintf(f, "(M = %lld slots; hot1 = the %lld hottest slots; ws = distinct slots per %d tokens; "
               "delta = most common slot shift between consecutive tokens)\n",
            (long long)M, (long long)((M + 99) / 100), window);
}
