/* test_stream.c — the streaming analyses against the in-memory ones on the
 * same trace, field by field: the replay reader against a sort of every
 * loaded event into replay order, the spilled streams' keys against
 * an_streams_build, every policy's simulation and the exact LRU curve
 * (head, layer and model scope, each op set, with and without warm-up),
 * OPT's next use against an_next_use, and per-head stats computed while
 * each head streams against stats of the whole loaded run. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "an_load.h"
#include "an_mrc.h"
#include "an_replay.h"
#include "an_simrun.h"
#include "an_spill.h"
#include "an_stats.h"
#include "rn_rng.h"
#include "th.h"
#include "tr_writer.h"

#define NPOS 700   /* three event blocks of 256 positions */
#define L 3
#define H 2
#define K 3
#define MS 16

static char DB[4096];

/* A run with skewed slots (so caches hit), CAPE on layer 0, tokens. */
static int make_db(void)
{
    rn_config c;
    rn_config_default(&c);
    c.n_layers = L; c.n_heads = H; c.d_p = 4; c.order = 2; c.top_k = K; c.d_v = 8;
    memset(c.cape_mask, 0, sizeof c.cape_mask);
    c.cape_mask[0] = 3;
    snprintf(DB, sizeof DB, "%s", th_path("stream.db"));
    tr_select sel;
    tr_select_all(&sel);
    tr_run_meta meta;
    memset(&meta, 0, sizeof meta);
    meta.name = "stream";
    meta.command = "trace";
    meta.cfg = &c;
    tr_writer *w;
    rn_error err;
    if (tr_writer_open(DB, &meta, &sel, NULL, &w, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    const rn_probe *pr = tr_writer_probe(w);
    rn_rng r;
    rn_rng_seed(&r, 13);
    for (int p = 0; p < NPOS; p++) {
        tr_writer_add_token(w, p, 65 + p % 26, NULL, 0);
        for (int l = 0; l < L; l++)
            for (int h = 0; h < H; h++)
                for (int op = 0; op < 2; op++) {
                    uint32_t slot[K];
                    float wt[K];
                    for (int k = 0; k < K; k++) {
                        /* skewed: low slots far more often */
                        uint32_t s = (uint32_t)rn_rng_below(&r, MS);
                        if (rn_rng_uniform(&r) < 0.6) s %= 4;
                        int dup = 1;
                        while (dup) {
                            dup = 0;
                            for (int j = 0; j < k; j++) dup |= slot[j] == s;
                            if (dup) s = (s + 1) % MS;
                        }
                        slot[k] = s;
                        wt[k] = (float)(0.9 - 0.2 * k);
                    }
                    pr->access(pr->user, l, h, p, op, K, slot, slot, wt);
                }
    }
    if (tr_writer_finish(w, TR_STATUS_COMPLETE, NULL, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    return 0;
}

static int suite_init(void) { return make_db(); }
TH_SUITE(stream, suite_init, NULL);

/* Every field equal (tr_event has padding, so not memcmp). */
static int same_event(const tr_event *a, const tr_event *b)
{
    return a->pos == b->pos && a->slot == b->slot && a->addr == b->addr && a->weight == b->weight &&
           a->layer == b->layer && a->head == b->head && a->op == b->op && a->rank == b->rank;
}

static int cmp_replay(const void *a, const void *b)
{
    const tr_event *x = a, *y = b;
    if (x->pos != y->pos) return x->pos < y->pos ? -1 : 1;
    if (x->layer != y->layer) return x->layer < y->layer ? -1 : 1;
    if (x->head != y->head) return x->head < y->head ? -1 : 1;
    if (x->op != y->op) return x->op < y->op ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

TH_TEST(test_replay_order, "the replay reader gives every event in (pos, layer, head, op, rank) order")
{
    an_run r;
    rn_error err;
    CU_ASSERT_EQUAL_FATAL(an_run_open(DB, 0, &r, &err), RN_OK);
    tr_event *ev;
    size_t n;
    CU_ASSERT_EQUAL_FATAL(an_run_load(&r, -1, -1, RN_OPS_BOTH, &ev, &n, &err), RN_OK);
    CU_ASSERT_EQUAL(n, (size_t)NPOS * L * H * 2 * K);
    qsort(ev, n, sizeof *ev, cmp_replay);
    an_replay *rp;
    CU_ASSERT_EQUAL_FATAL(an_replay_open(r.db, r.run.run_id, 0, L, 0, H, RN_OPS_BOTH, &rp, &err), RN_OK);
    size_t i = 0, bad = 0;
    tr_event e;
    int rc;
    while ((rc = an_replay_next(rp, &e, &err)) == 1) {
        if (i >= n || !same_event(&e, &ev[i])) bad++;
        i++;
    }
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_EQUAL(i, n);
    CU_ASSERT_EQUAL(bad, 0);
    an_replay_close(rp);
    free(ev);
    an_run_close(&r);
}

/* Spilled streams equal the in-memory ones: keys, counts, warm-up prefix,
 * next use, every policy's simulation and the exact LRU curve. */
static void check_scope(const an_run *r, int scope, int ops, int32_t warmup, int layer)
{
    rn_error err;
    tr_event *ev;
    size_t n;
    CU_ASSERT_EQUAL_FATAL(an_run_load(r, layer, -1, ops, &ev, &n, &err), RN_OK);
    an_streams ss;
    CU_ASSERT_EQUAL_FATAL(an_streams_build(ev, n, &r->run.cfg, scope, ops, &ss, &err), RN_OK);
    free(ev);
    an_spill sp;
    CU_ASSERT_EQUAL_FATAL(an_spill_build(r, layer, -1, scope, ops, warmup, NULL, &sp, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(sp.n, ss.n);
    CU_ASSERT_EQUAL_FATAL(an_spill_next_use(&sp, &err), RN_OK);
    int bad = 0;
    for (int i = 0; i < ss.n; i++) {
        const an_stream *s = &ss.s[i];
        const an_spill_stream *t = &sp.s[i];
        CU_ASSERT_FATAL(t->n == s->n && t->n_keys == s->n_keys && t->layer == s->layer && t->head == s->head &&
                        t->universe == s->universe);
        uint64_t warm = 0;
        for (size_t j = 0; j < s->n; j++) warm += s->pos[j] < warmup;
        CU_ASSERT_EQUAL(t->n_warm, warm);
        uint32_t *key = malloc(s->n * sizeof *key), *nxt = malloc(s->n * sizeof *nxt),
                 *ref = malloc(s->n * sizeof *ref), *last = malloc(s->n_keys * sizeof *last);
        CU_ASSERT_EQUAL_FATAL(an_spill_read(&sp, i, 0, s->n, key, nxt, &err), RN_OK);
        an_next_use(s, ref, last);
        bad += memcmp(key, s->key, s->n * sizeof *key) != 0;
        bad += memcmp(nxt, ref, s->n * sizeof *nxt) != 0;
        free(key); free(nxt); free(ref); free(last);
    }
    CU_ASSERT_EQUAL(bad, 0);
    const rn_policy *pol[16];
    int np = 0;
    CU_ASSERT_EQUAL_FATAL(rn_policy_parse_list("all", pol, 16, &np, &err), RN_OK);
    const uint64_t caps[4] = { 1, 3, 8, 40 };
    int nc = 0;
    while (nc < 4 && caps[nc] <= ss.s[0].universe) nc++;
    an_simgrid a, b;
    CU_ASSERT_EQUAL_FATAL(an_simgrid_run(&ss, pol, np, caps, nc, warmup, 36, NULL, NULL, &a, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(an_simgrid_run_spill(&sp, pol, np, caps, nc, 36, NULL, NULL, &b, &err), RN_OK);
    for (int j = 0; j < np * nc; j++) {
        CU_ASSERT_EQUAL(a.result[j].accesses, b.result[j].accesses);
        CU_ASSERT_EQUAL(a.result[j].hits, b.result[j].hits);
        CU_ASSERT_EQUAL(a.result[j].misses, b.result[j].misses);
    }
    an_mrc ma, mb;
    CU_ASSERT_EQUAL_FATAL(an_mrc_build(&ss, warmup, &ma, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(an_mrc_build_spill(&sp, &mb, &err), RN_OK);
    CU_ASSERT_FATAL(ma.n == mb.n && ma.accesses == mb.accesses && ma.cold == mb.cold);
    CU_ASSERT(!memcmp(ma.misses, mb.misses, (size_t)ma.n * sizeof *ma.misses));
    an_mrc_free(&ma); an_mrc_free(&mb);
    an_simgrid_free(&a); an_simgrid_free(&b);
    an_spill_free(&sp);
    an_streams_free(&ss);
}

TH_TEST(test_spill_equals_memory, "spilled streams simulate exactly as loaded ones (every scope, ops, warm-up)")
{
    an_run r;
    rn_error err;
    CU_ASSERT_EQUAL_FATAL(an_run_open(DB, 0, &r, &err), RN_OK);
    const int ops[3] = { RN_OPS_BOTH, RN_OPS_READ, RN_OPS_WRITE };
    for (int scope = RN_CACHE_SCOPE_HEAD; scope <= RN_CACHE_SCOPE_MODEL; scope++)
        for (int o = 0; o < 3; o++) {
            check_scope(&r, scope, ops[o], 0, -1);
            check_scope(&r, scope, ops[o], 300, -1);
        }
    check_scope(&r, RN_CACHE_SCOPE_MODEL, RN_OPS_BOTH, 5, 1);
    /* the same through the hash map instead of the key table */
    uint64_t direct = an_spill_direct_max;
    an_spill_direct_max = 0;
    for (int scope = RN_CACHE_SCOPE_HEAD; scope <= RN_CACHE_SCOPE_MODEL; scope++) check_scope(&r, scope, RN_OPS_BOTH, 300, -1);
    an_spill_direct_max = direct;
    an_run_close(&r);
}

/* Stops a grid after `after` simulations (test_simgrid_threads). */
static int stop_after(void *user, int done, int total)
{
    (void)total;
    return done >= *(int *)user;
}

TH_TEST(test_simgrid_threads, "simulate's policy x capacity cells on 1, 2 or 4 threads give the same counts as one cache at a time")
{
    an_run r;
    rn_error err;
    CU_ASSERT_EQUAL_FATAL(an_run_open(DB, 0, &r, &err), RN_OK);
    const rn_policy *pol[16];
    int np = 0;
    CU_ASSERT_EQUAL_FATAL(rn_policy_parse_list("all", pol, 16, &np, &err), RN_OK);
    const uint64_t caps[3] = { 2, 7, 30 };
    const int nc = 3, saved = omp_get_max_threads();
    for (int scope = RN_CACHE_SCOPE_HEAD; scope <= RN_CACHE_SCOPE_MODEL; scope++) {
        tr_event *ev;
        size_t n;
        CU_ASSERT_EQUAL_FATAL(an_run_load(&r, -1, -1, RN_OPS_BOTH, &ev, &n, &err), RN_OK);
        an_streams ss;
        CU_ASSERT_EQUAL_FATAL(an_streams_build(ev, n, &r.run.cfg, scope, RN_OPS_BOTH, &ss, &err), RN_OK);
        free(ev);
        /* the reference: each (policy, capacity) through one cache per stream, in turn */
        an_sim_result ref[16 * 3];
        memset(ref, 0, sizeof ref);
        for (int i = 0; i < ss.n; i++) {
            uint32_t *nxt = malloc((ss.s[i].n + 1) * sizeof *nxt), *last = malloc((ss.s[i].n_keys + 1) * sizeof *last);
            an_next_use(&ss.s[i], nxt, last);
            for (int k = 0; k < np * nc; k++)
                CU_ASSERT_EQUAL(an_simulate(&ss.s[i], pol[k / nc], caps[k % nc], 0, nxt, &ref[k], &err), RN_OK);
            free(nxt); free(last);
        }
        an_spill sp;
        CU_ASSERT_EQUAL_FATAL(an_spill_build(&r, -1, -1, scope, RN_OPS_BOTH, 0, NULL, &sp, &err), RN_OK);
        const int threads[3] = { 1, 2, 4 };
        for (int t = 0; t < 3; t++) {
            omp_set_num_threads(threads[t]);
            an_simgrid a, b;
            CU_ASSERT_EQUAL_FATAL(an_simgrid_run(&ss, pol, np, caps, nc, 0, 36, NULL, NULL, &a, &err), RN_OK);
            CU_ASSERT_EQUAL_FATAL(an_simgrid_run_spill(&sp, pol, np, caps, nc, 36, NULL, NULL, &b, &err), RN_OK);
            CU_ASSERT(!memcmp(a.result, ref, sizeof *ref * (size_t)(np * nc)));
            CU_ASSERT(!memcmp(b.result, ref, sizeof *ref * (size_t)(np * nc)));
            an_simgrid_free(&a); an_simgrid_free(&b);
            /* a progress callback that asks to stop: RN_EINTR, nothing kept */
            int after = 3;
            CU_ASSERT_EQUAL(an_simgrid_run_spill(&sp, pol, np, caps, nc, 36, stop_after, &after, &b, &err), RN_EINTR);
            CU_ASSERT_PTR_NULL(b.result);
            CU_ASSERT_EQUAL(an_simgrid_run(&ss, pol, np, caps, nc, 0, 36, stop_after, &after, &a, &err), RN_EINTR);
            CU_ASSERT_PTR_NULL(a.result);
        }
        omp_set_num_threads(saved);
        an_spill_free(&sp);
        an_streams_free(&ss);
    }
    an_run_close(&r);
}

/* Records an_stats_run's progress calls (test_stats_stream). */
static void stats_prog(void *user, int done, int total)
{
    struct rec { int *calls, *last, *total, *monotone; } *r = user;
    if (*r->calls && (done <= *r->last || total != *r->total)) *r->monotone = 0;
    (*r->calls)++;
    *r->last = done;
    *r->total = total;
}

TH_TEST(test_stats_per_head, "stats streamed head by head (1, 2, 3 threads) equal stats of the whole loaded run")
{
    an_run r;
    rn_error err;
    CU_ASSERT_EQUAL_FATAL(an_run_open(DB, 0, &r, &err), RN_OK);
    tr_event *ev;
    size_t n;
    CU_ASSERT_EQUAL_FATAL(an_run_load(&r, -1, -1, RN_OPS_BOTH, &ev, &n, &err), RN_OK);
    an_streams ss;
    CU_ASSERT_EQUAL_FATAL(an_streams_build(ev, n, &r.run.cfg, RN_CACHE_SCOPE_HEAD, RN_OPS_BOTH, &ss, &err), RN_OK);
    free(ev);
    /* the reuse times all counted in the array, then (a limit of 2 tokens)
     * nearly all listed, then each head loaded instead of streamed */
    const size_t dense[3] = { an_stats_dense_reuse, 2, an_stats_dense_reuse };
    /* and the heads on 1, 2 and 3 threads (each head alone, gathered in order) */
    const int saved = omp_get_max_threads();
    for (int d = 0; d < 9; d++) {
        omp_set_num_threads(1 + d / 3);
        size_t keep = an_stats_dense_reuse, keep_slots = an_stats_stream_max_slots;
        an_stats_dense_reuse = dense[d % 3];
        if (d % 3 == 2) an_stats_stream_max_slots = 0; /* each head loaded instead */
        an_head_stats *hs;
        int nh;
        uint64_t total;
        CU_ASSERT_EQUAL_FATAL(an_stats_run(&r, -1, -1, 16, NULL, &hs, &nh, &total, &err), RN_OK);
        an_stats_dense_reuse = keep;
        an_stats_stream_max_slots = keep_slots;
        CU_ASSERT_EQUAL_FATAL(nh, ss.n);
        CU_ASSERT_EQUAL(total, n);
        for (int i = 0; i < ss.n; i++) {
            an_head_stats ref;
            CU_ASSERT_EQUAL_FATAL(an_stats_head(&ss.s[i], r.M, rn_config_cape(&r.run.cfg, ss.s[i].layer,
                                                ss.s[i].head), 16, &ref, &err), RN_OK);
            CU_ASSERT(!memcmp(&ref, &hs[i], sizeof ref));
        }
        free(hs);
    }
    omp_set_num_threads(saved);
    /* progress after every selected head, up to the total; stop interrupts */
    {
        int calls = 0, last = 0, total_heads = 0, monotone = 1;
        struct rec { int *calls, *last, *total, *monotone; } rr = { &calls, &last, &total_heads, &monotone };
        an_stats_ctl ctl = { NULL, stats_prog, &rr };
        an_head_stats *hs;
        int nh;
        uint64_t total;
        CU_ASSERT_EQUAL_FATAL(an_stats_run(&r, -1, -1, 16, &ctl, &hs, &nh, &total, &err), RN_OK);
        free(hs);
        CU_ASSERT(monotone);
        CU_ASSERT_EQUAL(total_heads, r.run.cfg.n_layers * r.run.cfg.n_heads);
        CU_ASSERT_EQUAL(last, total_heads);
        CU_ASSERT_EQUAL(calls, total_heads);
        volatile int stop = 1;
        an_stats_ctl halt = { &stop, NULL, NULL };
        CU_ASSERT_EQUAL(an_stats_run(&r, -1, -1, 16, &halt, &hs, &nh, &total, &err), RN_EINTR);
    }
    an_streams_free(&ss);
    an_run_close(&r);
}

TH_TEST(test_spill_chunks, "spill keys and next uses across chunk boundaries (chunks of 1 to 4096 accesses) vs brute force")
{
    an_run r;
    rn_error err;
    CU_ASSERT_EQUAL_FATAL(an_run_open(DB, 0, &r, &err), RN_OK);
    const size_t chunks[] = { 1, 2, 3, 7, 64, 1000, 4096, an_spill_chunk };
    const size_t keep = an_spill_chunk;
    static const int scopes[2] = { RN_CACHE_SCOPE_HEAD, RN_CACHE_SCOPE_MODEL };
    for (int sc = 0; sc < 2; sc++) {
        const int scope = scopes[sc];
        tr_event *ev;
        size_t n;
        CU_ASSERT_EQUAL_FATAL(an_run_load(&r, -1, -1, RN_OPS_BOTH, &ev, &n, &err), RN_OK);
        an_streams ss;
        CU_ASSERT_EQUAL_FATAL(an_streams_build(ev, n, &r.run.cfg, scope, RN_OPS_BOTH, &ss, &err), RN_OK);
        free(ev);
        /* brute force: the next access with the same key, scanning forward */
        uint32_t **ref = calloc((size_t)ss.n, sizeof *ref);
        CU_ASSERT_PTR_NOT_NULL_FATAL(ref);
        for (int i = 0; i < ss.n; i++) {
            const an_stream *s = &ss.s[i];
            ref[i] = malloc(s->n * sizeof **ref);
            for (size_t j = 0; j < s->n; j++) {
                size_t k = j + 1;
                while (k < s->n && s->key[k] != s->key[j]) k++;
                ref[i][j] = k < s->n ? (uint32_t)k : AN_NONE;
            }
        }
        CU_ASSERT(ss.s[0].n > 4096); /* the largest chunk still splits the first stream */
        for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++) {
            an_spill_chunk = chunks[c];
            an_spill sp;
            int rc = an_spill_build(&r, -1, -1, scope, RN_OPS_BOTH, 0, NULL, &sp, &err);
            if (!rc) rc = an_spill_next_use(&sp, &err);
            an_spill_chunk = keep;
            CU_ASSERT_EQUAL_FATAL(rc, RN_OK);
            CU_ASSERT_EQUAL_FATAL(sp.n, ss.n);
            int bad = 0;
            for (int i = 0; i < ss.n; i++) {
                const an_stream *s = &ss.s[i];
                CU_ASSERT_EQUAL_FATAL(sp.s[i].n, s->n);
                uint32_t *key = malloc(s->n * sizeof *key), *nxt = malloc(s->n * sizeof *nxt);
                CU_ASSERT_EQUAL_FATAL(an_spill_read(&sp, i, 0, s->n, key, nxt, &err), RN_OK);
                bad += memcmp(key, s->key, s->n * sizeof *key) != 0;
                for (size_t j = 0; j < s->n; j++) bad += nxt[j] != ref[i][j];
                free(key);
                free(nxt);
            }
            if (bad) fprintf(stderr, "\nscope %d, chunk %zu: %d wrong", scope, chunks[c], bad);
            CU_ASSERT_EQUAL(bad, 0);
            an_spill_free(&sp);
        }
        for (int i = 0; i < ss.n; i++) free(ref[i]);
        free(ref);
        an_streams_free(&ss);
    }
    an_run_close(&r);
}
