/* fuzz_trace.c — fuzz target: trace databases.
 *
 * A real small trace is written once per process with the trace writer
 * (2 layers x 2 heads, M = 16, K = 3, 20 positions, CAPE on two heads).
 * Each input is a script of structured edits applied to a fresh copy
 * (tracegen.h): SQL-level (a value set to an out-of-range or mistyped
 * value, rows deleted or duplicated, columns swapped, the run's config
 * text spliced, a block's BLOBs cut or zeroed, the schema changed, the run
 * copied as a second run) and
 * then byte-level (the file truncated, bytes overwritten).  The readers
 * and the library behind `stats`, `simulate`, `export` and `attribute`
 * then run on it, as those commands call them.
 *
 * Checks: every failure is one line and RN_EINPUT (a corrupt trace is bad
 * input); events that load obey the run's header (layer, head, pos, op,
 * rank, slot, weight) and canonical order; the streaming iterator and the
 * count agree with the bulk load; every simulation counts each access once,
 * LRU agrees with the exact miss-ratio curve and OPT misses no more than
 * any policy; the oracleGeneral export has one record per access with
 * consistent next-use links; attribution coefficients are finite.
 */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "an_attribute.h"
#include "an_cache.h"
#include "an_export.h"
#include "an_load.h"
#include "an_mrc.h"
#include "an_simrun.h"
#include "an_spill.h"
#include "an_stats.h"
#include "an_stream.h"
#include "fuzz.h"
#include "rn_rows.h"
#include "tracegen.h"
#include "tr_writer.h"

static FILE *g_null;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    g_null = fopen("/dev/null", "w");
    tracegen_init();
    return 0;
}

#define BAD FUZZ_CODE(RN_EINPUT)

/* The checks on loaded events: within the run's header, canonical order. */
static void check_events(const an_run *r, const tr_event *ev, size_t n)
{
    const rn_config *c = &r->run.cfg;
    for (size_t i = 0; i < n; i++) {
        const tr_event *e = &ev[i];
        fuzz_check(e->layer < c->n_layers && e->head < c->n_heads && e->op <= 1 && e->rank < c->top_k &&
                   e->pos >= 0 && e->pos < r->run.n_tokens && (int64_t)e->slot < r->M &&
                   (int64_t)e->addr < r->M && e->weight >= 0 && e->weight <= 1,
                   "event %zu out of the run's range: layer %d head %d pos %d op %d rank %d slot %u", i,
                   e->layer, e->head, e->pos, e->op, e->rank, e->slot);
        if (i) {
            const tr_event *p = &ev[i - 1];
            int64_t a[5] = { p->layer, p->head, p->pos, p->op, p->rank }, b[5] = { e->layer, e->head, e->pos, e->op, e->rank };
            int cmp = 0;
            for (int k = 0; k < 5 && !cmp; k++) cmp = a[k] < b[k] ? -1 : a[k] > b[k];
            fuzz_check(cmp <= 0, "events %zu and %zu are not in canonical order", i - 1, i);
        }
    }
}

/* The readers: iterator and count agree with the bulk load. */
static void check_readers(const an_run *r, const tr_event *ev, size_t n)
{
    rn_error err = { 0 };
    tr_filter f = tr_filter_all();
    tr_iter *it;
    int rc = tr_iter_open(r->db, r->run.run_id, &f, &it, &err);
    if (rc) fuzz_check_error(rc, &err, BAD, "tr_iter_open");
    else {
        tr_event e;
        size_t i = 0;
        while ((rc = tr_iter_next(it, &e, &err)) == 1) {
            fuzz_check(i < n && e.pos == ev[i].pos && e.slot == ev[i].slot && e.layer == ev[i].layer &&
                       e.head == ev[i].head && e.op == ev[i].op && e.rank == ev[i].rank &&
                       e.addr == ev[i].addr && !memcmp(&e.weight, &ev[i].weight, 4),
                       "iterator event %zu differs from the bulk load", i);
            i++;
        }
        if (rc) fuzz_check_error(rc, &err, BAD, "tr_iter_next");
        else fuzz_check(i == n, "iterator gave %zu events, the bulk load %zu", i, n);
        tr_iter_close(it);
    }
    int64_t cnt;
    rc = tr_count_events(r->db, r->run.run_id, &f, &cnt, &err);
    if (rc) fuzz_check_error(rc, &err, BAD, "tr_count_events");
    else fuzz_check(cnt == (int64_t)n, "count %lld, loaded %zu", (long long)cnt, n);
    tr_run_info *runs;
    int nr;
    rc = tr_list_runs(r->db, &runs, &nr, &err);
    if (rc) fuzz_check_error(rc, &err, BAD, "tr_list_runs");
    else {
        fuzz_check(nr >= 1, "%s", "no runs listed but one opened");
        free(runs);
    }
}

/* `stats`: per-head streams and their statistics, printed every way. */
static void do_stats(const an_run *r, const tr_event *ev, size_t n, int window)
{
    rn_error err = { 0 };
    an_streams ss;
    int rc = an_streams_build(ev, n, &r->run.cfg, RN_CACHE_SCOPE_HEAD, RN_OPS_BOTH, &ss, &err);
    if (rc) { fuzz_check_error(rc, &err, BAD, "an_streams_build(head)"); return; }
    an_head_stats *hs = calloc((size_t)(ss.n ? ss.n : 1), sizeof *hs);
    fuzz_check(hs != NULL, "%s", "out of memory");
    for (int i = 0; i < ss.n && !rc; i++) {
        rc = an_stats_head(&ss.s[i], r->M, rn_config_cape(&r->run.cfg, ss.s[i].layer, ss.s[i].head), window,
                           &hs[i], &err);
        if (rc) fuzz_check_error(rc, &err, BAD, "an_stats_head");
        else fuzz_check(hs[i].events == ss.s[i].n && hs[i].reads + hs[i].writes == hs[i].events &&
                        hs[i].warm_reads + hs[i].cold_reads == hs[i].reads && hs[i].distinct <= (uint64_t)r->M,
                        "stats of head %d/%d do not add up", hs[i].layer, hs[i].head);
    }
    if (!rc)
        for (int fmt = 0; fmt < 3; fmt++) {
            int f = fmt == 0 ? RN_FMT_TABLE : fmt == 1 ? RN_FMT_CSV : RN_FMT_JSON;
            fuzz_check(an_stats_print(g_null, f, hs, ss.n, r->M, window, &err) == RN_OK, "stats print: %s", err.msg);
        }
    /* `stats` streams each head: the same numbers, or bad input */
    an_head_stats *st;
    int nst;
    uint64_t tot;
    int src = an_stats_run(r, -1, -1, window, NULL, &st, &nst, &tot, &err);
    if (src) fuzz_check_error(src, &err, BAD, "an_stats_run");
    else if (!rc) {
        fuzz_check(nst == ss.n && tot == n, "streamed stats: %d heads, %llu events; loaded %d, %zu", nst,
                   (unsigned long long)tot, ss.n, n);
        for (int i = 0; i < nst && i < ss.n; i++)
            fuzz_check(!memcmp(&st[i], &hs[i], sizeof *st), "streamed stats of head %d/%d differ", st[i].layer,
                       st[i].head);
        free(st);
    } else free(st);
    free(hs);
    an_streams_free(&ss);
}

/* `simulate`: every policy at a few capacities over the model scope, the
 * exact LRU curve, and their agreement. */
static void do_simulate(const an_run *r, const tr_event *ev, size_t n)
{
    rn_error err = { 0 };
    an_streams ss;
    int rc = an_streams_build(ev, n, &r->run.cfg, RN_CACHE_SCOPE_MODEL, RN_OPS_BOTH, &ss, &err);
    if (rc) { fuzz_check_error(rc, &err, BAD, "an_streams_build(model)"); return; }
    if (ss.n == 0) { an_streams_free(&ss); return; }
    uint64_t universe = ss.s[0].universe;
    uint64_t caps[3] = { 1, 3 < universe ? 3 : universe, an_streams_max_keys(&ss) ? an_streams_max_keys(&ss) : 1 };
    const rn_policy *pol[32];
    int np = rn_policy_count() < 32 ? rn_policy_count() : 32;
    for (int i = 0; i < np; i++) pol[i] = rn_policy_at(i);
    an_simgrid g;
    an_mrc mrc;
    rc = an_simgrid_run(&ss, pol, np, caps, 3, 0, (uint64_t)(r->run.cfg.d_v + 1) * 4, NULL, NULL, &g, &err);
    if (rc) { fuzz_check_error(rc, &err, BAD, "an_simgrid_run"); an_streams_free(&ss); return; }
    rc = an_mrc_build(&ss, 0, &mrc, &err);
    fuzz_check(rc == RN_OK, "an_mrc_build: %s", err.msg);
    size_t total = an_streams_total(&ss);
    int opt = -1;
    for (int p = 0; p < np; p++)
        if (!strcmp(pol[p]->name, "opt")) opt = p;
    for (int p = 0; p < np; p++)
        for (int c = 0; c < 3; c++) {
            const an_sim_result *res = &g.result[p * 3 + c];
            fuzz_check(res->accesses == total && res->hits + res->misses == res->accesses,
                       "%s at %llu: %llu accesses of %zu", pol[p]->name, (unsigned long long)caps[c],
                       (unsigned long long)res->accesses, total);
            if (!strcmp(pol[p]->name, "lru"))
                fuzz_check(res->misses == an_mrc_misses_at(&mrc, caps[c]), "LRU %llu misses, exact curve %llu",
                           (unsigned long long)res->misses, (unsigned long long)an_mrc_misses_at(&mrc, caps[c]));
            if (opt >= 0)
                fuzz_check(g.result[opt * 3 + c].misses <= res->misses, "OPT misses more than %s", pol[p]->name);
        }
    fuzz_check(an_simgrid_print(g_null, RN_FMT_JSON, &g, &mrc, &err) == RN_OK, "%s", err.msg);
    fuzz_check(an_mrc_print_csv(g_null, &mrc, &err) == RN_OK, "%s", err.msg);
    /* `simulate` streams the run into a key file: the same results */
    an_spill sp;
    rc = an_spill_build(r, -1, -1, RN_CACHE_SCOPE_MODEL, RN_OPS_BOTH, 0, NULL, &sp, &err);
    if (rc) fuzz_check_error(rc, &err, BAD, "an_spill_build");
    else {
        an_simgrid g2;
        an_mrc m2;
        fuzz_check(an_simgrid_run_spill(&sp, pol, np, caps, 3, (uint64_t)(r->run.cfg.d_v + 1) * 4, NULL, NULL, &g2,
                                        &err) == RN_OK, "an_simgrid_run_spill: %s", err.msg);
        for (int j = 0; j < np * 3; j++)
            fuzz_check(g2.result[j].hits == g.result[j].hits && g2.result[j].accesses == g.result[j].accesses,
                       "streamed simulation %d differs", j);
        fuzz_check(an_mrc_build_spill(&sp, &m2, &err) == RN_OK && m2.n == mrc.n && m2.cold == mrc.cold &&
                   !memcmp(m2.misses, mrc.misses, (size_t)mrc.n * sizeof *mrc.misses), "%s", "streamed curve differs");
        an_mrc_free(&m2);
        an_simgrid_free(&g2);
        an_spill_free(&sp);
    }
    an_mrc_free(&mrc);
    an_simgrid_free(&g);
    an_streams_free(&ss);
}

/* `export`: oracleGeneral into memory (decoded and checked) and CSV. */
static void do_export(const an_run *r, const tr_event *ev, size_t n)
{
    rn_error err = { 0 };
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fuzz_check(f != NULL, "%s", "open_memstream");
    int rc = an_export_write(f, AN_EXPORT_ORACLEGENERAL, ev, n, &r->run.cfg, RN_OPS_BOTH, NULL, &err);
    fclose(f);
    if (rc) fuzz_check_error(rc, &err, BAD, "an_export_write");
    else {
        fuzz_check(len == n * AN_OG_RECORD, "%zu bytes for %zu accesses", len, n);
        uint32_t last_time = 0;
        for (size_t i = 0; i < n; i++) {
            an_og_record a, b;
            an_og_decode((const unsigned char *)buf, i, &a);
            fuzz_check(a.time >= last_time, "record %zu goes back in time", i);
            last_time = a.time;
            fuzz_check(a.next == -1 || (a.next > (int64_t)i + 1 && a.next <= (int64_t)n), "record %zu: next %lld", i,
                       (long long)a.next);
            if (a.next > 0) {
                an_og_decode((const unsigned char *)buf, (size_t)a.next - 1, &b);
                fuzz_check(b.obj_id == a.obj_id, "record %zu: next points at another object", i);
            }
        }
    }
    free(buf);
    rc = an_export_write(g_null, AN_EXPORT_CSV, ev, n, &r->run.cfg, RN_OPS_BOTH, NULL, &err);
    if (rc) fuzz_check_error(rc, &err, BAD, "an_export_write(csv)");
}

/* `attribute`: one read and the whole matrix of the first traced head. */
static void do_attribute(const an_run *r, uint8_t pick)
{
    if (r->n_heads == 0) return;
    rn_error err = { 0 };
    tr_event *ev = NULL;
    size_t n = 0;
    tr_token *toks = NULL;
    int64_t nt = 0;
    const tr_head_info *h = &r->heads[pick % r->n_heads];
    int rc = an_run_load(r, h->layer, h->head, RN_OPS_BOTH, &ev, &n, &err);
    if (rc) { fuzz_check_error(rc, &err, BAD, "an_run_load(head)"); return; }
    if ((rc = tr_load_tokens(r->db, r->run.run_id, &toks, &nt, &err))) {
        fuzz_check_error(rc, &err, BAD, "tr_load_tokens");
        free(ev);
        return;
    }
    const rn_config *c = &r->run.cfg;
    if (n) {
        an_attribution a;
        rc = an_attribute_read(ev, n, r->M, c->gamma, c->eps, ev[(pick * 7u) % n].pos, &a, &err);
        if (rc) fuzz_check_error(rc, &err, BAD, "an_attribute_read");
        else {
            for (size_t i = 0; i < a.n_terms; i++) fuzz_check(isfinite(a.terms[i].coef), "term %zu not finite", i);
            fuzz_check(isfinite(a.total), "%s", "total not finite");
            fuzz_check(an_attribution_print_terms(g_null, &a, &err) == RN_OK, "%s", err.msg);
            fuzz_check(an_attribution_print(g_null, RN_FMT_JSON, &a, h->layer, h->head, toks, nt, 5, &err) == RN_OK,
                       "%s", err.msg);
            fuzz_check(an_attribution_print(g_null, RN_FMT_TABLE, &a, h->layer, h->head, toks, nt, 0, &err) == RN_OK,
                       "%s", err.msg);
            an_attribution_free(&a);
        }
    }
    an_matrix m;
    rc = an_attribute_matrix(ev, n, r->M, c->gamma, c->eps, 64, &m, &err);
    if (rc) fuzz_check_error(rc, &err, BAD, "an_attribute_matrix");
    else {
        for (int64_t i = 0; i < m.n; i++)
            for (int64_t j = 0; j < m.n; j++)
                fuzz_check(isfinite(m.values[i * m.n + j]) && (j <= i || m.values[i * m.n + j] == 0),
                           "matrix cell %lld,%lld", (long long)i, (long long)j);
        fuzz_check(an_matrix_print_csv(g_null, &m, &err) == RN_OK, "%s", err.msg);
        an_matrix_free(&m);
    }
    free(toks);
    free(ev);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096) return 0;
    fuzz_in in = { data, size };
    uint8_t knobs = fuzz_u8(&in);
    char path[512];
    fuzz_path(path, sizeof path, "t.db");
    tracegen_build(path, &in);
    an_run r;
    rn_error err = { 0 };
    int rc = an_run_open(path, 0, &r, &err);
    if (rc) { fuzz_check_error(rc, &err, BAD, "an_run_open"); return 0; }
    tr_event *ev = NULL;
    size_t n = 0;
    rc = an_run_load(&r, -1, -1, RN_OPS_BOTH, &ev, &n, &err);
    if (rc) fuzz_check_error(rc, &err, BAD, "an_run_load");
    else {
        check_events(&r, ev, n);
        check_readers(&r, ev, n);
        do_stats(&r, ev, n, 1 + knobs % 16);
        do_simulate(&r, ev, n);
        do_export(&r, ev, n);
    }
    free(ev);
    do_attribute(&r, knobs);
    an_run_close(&r);
    return 0;
}
