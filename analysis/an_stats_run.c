/* an_stats_run.c — per-head statistics of a run computed while its events
 * stream from the trace reader, one head at a time (an_stats_run,
 * an_stats.h): the same numbers as an_stats_head over the loaded head, in
 * memory O(M + the longest reuse time) per head instead of O(events).
 *
 * Each quantity of an_stats_head is kept as it goes: access counts per
 * slot (and the order slots were first touched, so the entropy is summed
 * in the same order), written flags, the last window per slot, the
 * stack-distance state (an_sd, over slots), histograms of stack distances
 * (at most M) and reuse times (a counting array grown up to
 * an_stats_dense_reuse tokens, longer reuse times kept in a list and sorted at the end, so
 * sparse positions near 2^31 cost no memory), and the running mode of the
 * slot shifts with its tie rule. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "an_reuse.h"
#include "an_stats.h"

size_t an_stats_dense_reuse = (size_t)1 << 22;
#define RH_DENSE an_stats_dense_reuse

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static int cmp_desc_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x < y) - (x > y);
}

/* Exact percentiles of total values: a histogram cnt[0..n) and then the
 * sorted values big[0..nbig) (all >= n): the smallest v with at least
 * q·total values <= v (as an_percentiles). */
static void hist_percentiles(const uint64_t *cnt, size_t n, const uint32_t *big, size_t nbig, uint64_t total,
                             const double *q, int nq, uint32_t *out)
{
    for (int j = 0; j < nq; j++) {
        out[j] = AN_COLD;
        if (!total) continue;
        double need = q[j] * (double)total;
        uint64_t acc = 0;
        size_t v = 0;
        for (; v < n; v++) {
            acc += cnt[v];
            if ((double)acc >= need - 1e-9 && acc > 0) { out[j] = (uint32_t)v; break; }
        }
        if (v < n) continue;
        for (size_t i = 0; i < nbig; i++)
            if ((double)++acc >= need - 1e-9) { out[j] = big[i]; break; }
    }
}

typedef struct {
    int64_t M;
    int window;
    uint64_t *cnt;            /* [M] accesses per slot */
    uint32_t *first;          /* [M] slots in order of first access */
    uint32_t nk;
    uint32_t *runk;           /* [M] slots in order of first access in this run */
    uint32_t nrk;
    uint8_t *written;         /* [M] */
    int32_t *lastwin;         /* [M] */
    int32_t *lastpos;         /* [M] for reuse times, -1 never */
    an_sd sd;                 /* stack distances over slots */
    uint32_t *sdv;            /* one distance (an_sd_feed's output) */
    uint64_t *sdh;            /* [M + 2] distance histogram */
    uint64_t *rh;             /* [rcap] reuse-time histogram (rcap <= RH_DENSE) */
    size_t rcap;
    uint32_t *big;            /* [nbig] reuse times >= RH_DENSE */
    size_t nbig, bigcap;
    uint64_t nsd, nre;        /* non-cold distances, reuse times */
    uint64_t *dcnt;           /* [M + 1] shift counts, index d + M/2 */
    uint64_t best;
    int64_t mode;
    uint64_t nd;
    int32_t prevpos[2 * RN_MAX_TOPK];
    uint32_t prevslot[2 * RN_MAX_TOPK];
    int32_t lpos;             /* previous access's pos and op, for the rank */
    int lop, rank;
    uint64_t ws_sum;
    int64_t nwin;             /* windows of this run */
    int64_t nwin_done;        /* of the runs before it */
} head_acc;

static void acc_free(head_acc *a)
{
    free(a->cnt); free(a->first); free(a->runk); free(a->written); free(a->lastwin); free(a->lastpos);
    free(a->sdh); free(a->rh); free(a->big); free(a->dcnt);
    an_sd_free(&a->sd);
}

static int acc_init(head_acc *a, int64_t M, int window, rn_error *err)
{
    memset(a, 0, sizeof *a);
    a->M = M;
    a->window = window;
    size_t m = (size_t)M;
    a->cnt = calloc(m, sizeof *a->cnt);
    a->first = malloc(m * sizeof *a->first);
    a->runk = malloc(m * sizeof *a->runk);
    a->written = calloc(m, 1);
    a->lastwin = malloc(m * sizeof *a->lastwin);
    a->lastpos = malloc(m * sizeof *a->lastpos);
    a->sdh = calloc(m + 2, sizeof *a->sdh);
    a->rcap = RH_DENSE < 1024 ? RH_DENSE : 1024;
    a->rh = calloc(a->rcap, sizeof *a->rh);
    a->dcnt = calloc(m + 1, sizeof *a->dcnt);
    if (!a->cnt || !a->first || !a->runk || !a->written || !a->lastwin || !a->lastpos || !a->sdh || !a->rh || !a->dcnt) {
        acc_free(a);
        return rn_seterr(err, RN_ENOMEM, "out of memory for head statistics over %lld slots", (long long)M);
    }
    int rc = an_sd_init(&a->sd, (uint32_t)M, err);
    if (rc) { acc_free(a); return rc; }
    for (size_t k = 0; k < m; k++) { a->lastwin[k] = -1; a->lastpos[k] = -1; }
    for (int i = 0; i < 2 * RN_MAX_TOPK; i++) a->prevpos[i] = -2;
    a->lpos = -1;
    a->lop = -1;
    return RN_OK;
}

/* Start the next run of the same head: a run is a sequence of its own,
 * with its own memory, so what follows one access to the next (written
 * flags, reuse times, stack distances, windows, shifts, ranks) starts
 * afresh, while the counts and histograms go on accumulating.  Only the
 * slots the run touched are reset (runk), so many short runs of a model
 * with many slots cost their accesses, not M each. */
static void acc_next_run(head_acc *a)
{
    for (uint32_t i = 0; i < a->nrk; i++) {
        uint32_t k = a->runk[i];
        a->written[k] = 0;
        a->lastwin[k] = -1;
        a->lastpos[k] = -1;
    }
    an_sd_reset(&a->sd, a->runk, a->nrk);
    a->nrk = 0;
    for (int i = 0; i < 2 * RN_MAX_TOPK; i++) a->prevpos[i] = -2;
    a->lpos = -1;
    a->lop = -1;
    a->rank = 0;
    a->nwin_done += a->nwin;
    a->nwin = 0;
}

/* One access, in the head's (pos, op, rank) order: an_stats_head's loop
 * body, with the per-access values going into histograms. */
static int acc_add(head_acc *a, const tr_event *e, an_head_stats *o, rn_error *err)
{
    uint32_t k = e->slot;
    int op = e->op;
    int64_t M = a->M;
    if (!a->cnt[k]) a->first[a->nk++] = k;
    if (a->lastpos[k] < 0) a->runk[a->nrk++] = k;  /* (every access sets lastpos) */
    a->cnt[k]++;
    o->events++;
    if (op == RN_OP_WRITE) { o->writes++; a->written[k] = 1; }
    else { o->reads++; if (a->written[k]) o->warm_reads++; else o->cold_reads++; }
    a->rank = (a->lpos >= 0 && e->pos == a->lpos && op == a->lop) ? a->rank + 1 : 0;
    a->lpos = e->pos;
    a->lop = op;
    if (a->rank < RN_MAX_TOPK) {
        int j = op * RN_MAX_TOPK + a->rank;
        if (a->prevpos[j] == e->pos - 1) {
            int64_t d = ((int64_t)k - (int64_t)a->prevslot[j]) % M;
            if (d < 0) d += M;
            if (d > M / 2) d -= M;
            /* the running mode, with the loaded path's rule */
            uint64_t c = ++a->dcnt[d + M / 2];
            if (an_stats_shift_beats(d, c, a->mode, a->best)) { a->best = c; a->mode = d; }
            a->nd++;
        }
        a->prevpos[j] = e->pos;
        a->prevslot[j] = k;
    }
    int32_t w = e->pos / a->window;
    if (w >= a->nwin) a->nwin = (int64_t)w + 1;
    if (a->lastwin[k] != w) { a->lastwin[k] = w; a->ws_sum++; }
    if (a->lastpos[k] >= 0) {
        size_t v = (size_t)(e->pos - a->lastpos[k]);
        if (v >= RH_DENSE) {
            if (a->nbig == a->bigcap) {
                size_t nc = a->bigcap ? 2 * a->bigcap : 256;
                uint32_t *t = realloc(a->big, nc * sizeof *t);
                if (!t) return rn_seterr(err, RN_ENOMEM, "out of memory for reuse times");
                a->big = t;
                a->bigcap = nc;
            }
            a->big[a->nbig++] = (uint32_t)v;
        } else if (v >= a->rcap) {
            size_t nc = a->rcap;
            while (nc <= v) nc *= 2;   /* v < RH_DENSE, a power of two */
            uint64_t *t = realloc(a->rh, nc * sizeof *t);
            if (!t) return rn_seterr(err, RN_ENOMEM, "out of memory for reuse times");
            memset(t + a->rcap, 0, (nc - a->rcap) * sizeof *t);
            a->rh = t;
            a->rcap = nc;
        }
        if (v < RH_DENSE) a->rh[v]++;
        a->nre++;
    }
    a->lastpos[k] = e->pos;
    uint32_t dist;
    an_sd_feed(&a->sd, &k, 1, &dist);
    if (dist != AN_COLD) { a->sdh[dist]++; a->nsd++; }
    return RN_OK;
}

static int acc_finish(head_acc *a, an_head_stats *o, rn_error *err)
{
    int64_t M = a->M;
    uint32_t nk = a->nk;
    o->distinct = nk;
    o->used_share = (double)nk / (double)M;
    int64_t nwin = a->nwin_done + a->nwin;
    o->ws_mean = nwin ? (double)a->ws_sum / (double)nwin : 0;
    double H = 0;
    for (uint32_t i = 0; i < nk; i++) {
        double p = (double)a->cnt[a->first[i]] / (double)o->events;
        H -= p * log2(p);
    }
    o->entropy = H;
    o->entropy_norm = M > 1 ? H / log2((double)M) : 0;
    /* the hottest ceil(M/100) slots: the touched slots' counts, sorted */
    uint64_t *c = malloc((nk ? nk : 1) * sizeof *c);
    if (!c) return rn_seterr(err, RN_ENOMEM, "out of memory for head statistics");
    for (uint32_t i = 0; i < nk; i++) c[i] = a->cnt[a->first[i]];
    qsort(c, nk, sizeof *c, cmp_desc_u64);
    uint64_t hot = 0, nh = (uint64_t)((M + 99) / 100);
    for (uint32_t i = 0; i < nk && i < nh; i++) hot += c[i];
    free(c);
    o->hot_share = (double)hot / (double)o->events;
    o->delta = a->mode;
    o->delta_share = a->nd ? (double)a->best / (double)a->nd : 0;
    const double q[2] = { 0.5, 0.9 };
    uint32_t pc[2];
    if (a->nbig) qsort(a->big, a->nbig, sizeof *a->big, cmp_u32);
    hist_percentiles(a->rh, a->rcap, a->big, a->nbig, a->nre, q, 2, pc);
    o->reuse_p50 = pc[0]; o->reuse_p90 = pc[1];
    hist_percentiles(a->sdh, (size_t)M + 2, NULL, 0, a->nsd, q, 2, pc);
    o->sd_p50 = pc[0]; o->sd_p90 = pc[1];
    return RN_OK;
}

size_t an_stats_stream_max_slots = (size_t)1 << 22;

/* A head of a model with more than an_stats_stream_max_slots slots: the
 * per-slot arrays would cost more than the head's events, so the head is
 * loaded (memory O(its events)) and an_stats_head summarises it. */
static int head_stats_loaded(const an_run *r, int layer, int head, int window, an_head_stats *o, rn_error *err)
{
    tr_event *ev = NULL;
    size_t ne = 0;
    an_streams ss = { 0 };
    int rc = an_run_load(r, layer, head, RN_OPS_BOTH, &ev, &ne, err);
    if (rc) return rc;
    rc = an_streams_build(ev, ne, &r->run.cfg, RN_CACHE_SCOPE_HEAD, RN_OPS_BOTH, &ss, err);
    free(ev);
    if (!rc && ss.n == 1) rc = an_stats_head(&ss.s[0], r->M, rn_config_cape(&r->run.cfg, layer, head), window, o, err);
    an_streams_free(&ss);
    return rc;
}

/* Stats of (layer, head) over runs r[0..nr) from their event streams,
 * run after run (acc_next_run between them); o->events is 0 when the head
 * has none.  One run of a model above an_stats_stream_max_slots slots is
 * loaded instead; several runs always stream (memory O(M)). */
static int head_stats(const an_run *r, int nr, int layer, int head, int window, an_head_stats *o, rn_error *err)
{
    memset(o, 0, sizeof *o);
    o->layer = layer;
    o->head = head;
    o->cape = rn_config_cape(&r->run.cfg, layer, head);
    o->reuse_p50 = o->reuse_p90 = o->sd_p50 = o->sd_p90 = AN_COLD;
    if (nr == 1 && (uint64_t)r->M > an_stats_stream_max_slots) return head_stats_loaded(r, layer, head, window, o, err);
    tr_filter f = tr_filter_all();
    f.layer = layer;
    f.head = head;
    head_acc a;
    int rc = acc_init(&a, r->M, window, err);
    if (rc) return rc;
    for (int i = 0; i < nr && !rc; i++) {
        tr_iter *it;
        if (i > 0) acc_next_run(&a);
        if ((rc = tr_iter_open(r[i].db, r[i].run.run_id, &f, &it, err))) break;
        tr_event e;
        while ((rc = tr_iter_next(it, &e, err)) == 1)
            if ((rc = acc_add(&a, &e, o, err))) break;
        tr_iter_close(it);
    }
    if (!rc && o->events) rc = acc_finish(&a, o, err);
    acc_free(&a);
    return rc;
}

int an_stats_run(const an_run *r, int layer, int head, int window, const an_stats_ctl *ctl,
                 an_head_stats **out, int *n, uint64_t *events, rn_error *err)
{
    return an_stats_runs(r, 1, layer, head, window, ctl, out, n, events, err);
}

/* The heads run in parallel (OpenMP, up to omp_get_max_threads() threads,
 * at most one per head): each thread reads through connections of its
 * own, one per trace file (the first thread through r's), each head is summarised alone into
 * its own slot, and the heads are gathered in (layer, head) order, so the
 * output does not depend on the thread count. */
int an_stats_runs(const an_run *r, int nr, int layer, int head, int window, const an_stats_ctl *ctl,
                  an_head_stats **out, int *n, uint64_t *events, rn_error *err)
{
    volatile const int *stop = ctl ? ctl->stop : NULL;
    *out = NULL;
    *n = 0;
    *events = 0;
    const rn_config *cfg = &r->run.cfg;
    int l0 = layer >= 0 ? layer : 0, l1 = layer >= 0 ? layer + 1 : cfg->n_layers;
    int h0 = head >= 0 ? head : 0, h1 = head >= 0 ? head + 1 : cfg->n_heads;
    if (r->M <= 0) return rn_seterr(err, RN_EINPUT, "trace config has no valid slot count");
    int rc = RN_OK;
    for (int i = 0; i < nr && !rc; i++) rc = tr_check_block_heads(r[i].db, r[i].run.run_id, err);
    if (rc) return rc;
    int nh = (l1 - l0) * (h1 - h0), done = 0;
    an_head_stats *hs = calloc((size_t)nh + 1, sizeof *hs);
    int *hrc = calloc((size_t)nh + 1, sizeof *hrc);
    rn_error *herr = calloc((size_t)nh + 1, sizeof *herr);
    if (!hs || !hrc || !herr) {
        free(hs); free(hrc); free(herr);
        return rn_seterr(err, RN_ENOMEM, "out of memory");
    }
    volatile int failed = 0;
    int nt = omp_get_max_threads();
    if (nt > nh) nt = nh;
    if (nt < 1) nt = 1;
    #pragma omp parallel num_threads(nt)
    {
        an_run *own = NULL, *rr = (an_run *)r;
        tr_db **conn = NULL;
        int opened = 0, orc = RN_OK;
        rn_error oerr = { 0 };
        if (omp_get_thread_num() > 0) {
            /* r's runs with a connection of this thread's to each file
             * (consecutive runs of one file share it) */
            own = calloc((size_t)nr, sizeof *own);
            conn = calloc((size_t)nr, sizeof *conn);
            if (!own || !conn) orc = rn_seterr(&oerr, RN_ENOMEM, "out of memory");
            for (int i = 0; i < nr && !orc; i++) {
                if (i == 0 || strcmp(r[i].path, r[i - 1].path))
                    if ((orc = tr_open_read(r[i].path, &conn[opened++], &oerr))) break;
                own[i] = r[i];
                own[i].db = conn[opened - 1];
            }
            rr = own;
        }
        #pragma omp for schedule(dynamic, 1)
        for (int k = 0; k < nh; k++) {
            if (failed || (stop && *stop)) continue;
            if (orc) { hrc[k] = orc; herr[k] = oerr; failed = 1; continue; }
            hrc[k] = head_stats(rr, nr, l0 + k / (h1 - h0), h0 + k % (h1 - h0), window, &hs[k], &herr[k]);
            if (hrc[k]) { failed = 1; continue; }
            #pragma omp critical(an_stats_progress)
            {
                ++done;
                if (ctl && ctl->progress) ctl->progress(ctl->user, done, nh);
            }
        }
        for (int i = 0; i < opened; i++)
            if (conn[i]) tr_close(conn[i]);
        free(conn);
        free(own);  /* (its heads are r's) */
    }
    for (int k = 0; k < nh && !rc; k++)
        if (hrc[k]) { rc = hrc[k]; if (err) *err = herr[k]; }
    if (!rc && stop && *stop) rc = rn_seterr(err, RN_EINTR, "stats: interrupted; nothing printed");
    /* the heads with events, in (layer, head) order */
    for (int k = 0; k < nh && !rc; k++)
        if (hs[k].events) { *events += hs[k].events; hs[(*n)++] = hs[k]; }
    free(hrc); free(herr);
    if (rc) { free(hs); *n = 0; return rc; }
    *out = hs;
    return RN_OK;
}
