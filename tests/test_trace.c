/* test_trace.c — the trace writer and readers against a recording probe:
 * the database holds exactly the events the model reported (count and every
 * field, through the C reader and through the SQL `events` view), selections
 * and reader filters, K > 8 (several rows per group), tiny batches (queue
 * back-pressure), many runs per file, and clear errors for files that are not
 * traces or have another schema version. */
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "rn_model.h"
#include "rn_runtime.h"
#include "th.h"
#include "tr_reader.h"
#include "tr_writer.h"

typedef struct {
    tr_event *ev;
    size_t n, cap;
    const rn_probe *inner;   /* the writer's probe, called after recording */
} recorder;

static void rec_access(void *user, int layer, int head, int pos, int op, int k,
                       const uint32_t *slot, const uint32_t *addr, const float *weight)
{
    recorder *r = user;
    for (int i = 0; i < k; i++) {
        if (r->n == r->cap) {
            r->cap = r->cap ? 2 * r->cap : 4096;
            r->ev = realloc(r->ev, sizeof *r->ev * r->cap);
        }
        tr_event *e = &r->ev[r->n++];
        e->pos = pos; e->slot = slot[i]; e->addr = addr[i]; e->weight = weight[i];
        e->layer = (uint16_t)layer; e->head = (uint16_t)head; e->op = (uint8_t)op;
        e->rank = (uint16_t)i;
    }
    if (r->inner) r->inner->access(r->inner->user, layer, head, pos, op, k, slot, addr, weight);
}

static int cmp_canon(const void *a, const void *b)
{
    const tr_event *x = a, *y = b;
    if (x->layer != y->layer) return x->layer - y->layer;
    if (x->head != y->head) return x->head - y->head;
    if (x->pos != y->pos) return x->pos < y->pos ? -1 : 1;
    if (x->op != y->op) return x->op - y->op;
    return x->rank - y->rank;
}

static int same_event(const tr_event *a, const tr_event *b)
{
    return a->layer == b->layer && a->head == b->head && a->pos == b->pos && a->op == b->op &&
           a->rank == b->rank && a->slot == b->slot && a->addr == b->addr &&
           a->weight == b->weight;
}

static void small_config(rn_config *c, int K, int d_p, int order)
{
    rn_config_default(c);
    c->d_model = 32;
    c->n_layers = 3;
    c->n_heads = 3;
    c->d_p = d_p;
    c->order = order;
    c->top_k = K;
    c->d_v = 8;
    c->d_ff = 64;
    c->cape_mask[0] = 7;  /* layer 0 all CAPE, layer 1 head 1 CAPE, layer 2 none */
    c->cape_mask[1] = 2;
    c->cape_mask[2] = 0;
}

/* Run a random model on T prompt tokens then G steps with the writer's probe
 * (selection sel, may be NULL) behind a recorder; returns the run id. */
static int64_t traced_run(const char *db, const rn_config *c, const tr_select *sel, int T, int G,
                          const tr_writer_opts *opts, recorder *rec, const char *name)
{
    rn_error err = { 0 };
    rn_model m;
    rn_runtime *rt = NULL;
    CU_ASSERT_EQUAL_FATAL(rn_model_create_random(&m, c, 7, &err), 0);
    CU_ASSERT_EQUAL_FATAL(rn_runtime_create(&m, 16, &rt, &err), 0);
    tr_run_meta meta = { .name = name, .command = "test", .model_path = "random",
                         .model_hash = 0x1234abcdULL, .cfg = c, .prompt = "hello",
                         .sampling = "greedy" };
    tr_writer *w = NULL;
    int rc = tr_writer_open(db, &meta, sel, opts, &w, &err);
    if (rc) fprintf(stderr, "\n%s\n", err.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    int64_t run_id = tr_writer_run_id(w);
    memset(rec, 0, sizeof *rec);
    rec->inner = tr_writer_probe(w);
    rn_probe p = { .user = rec, .access = rec_access };
    rn_runtime_set_probe(rt, &p);
    int *toks = malloc(sizeof(int) * (T + G));
    for (int i = 0; i < T + G; i++) toks[i] = (i * 37 + 11) % c->vocab_size;
    CU_ASSERT_EQUAL(rn_prefill(rt, toks, T, NULL, 0, &err), 0);
    for (int i = 0; i < T; i++) tr_writer_add_token(w, i, toks[i], "p", 0);
    for (int g = 0; g < G; g++) {
        CU_ASSERT_EQUAL(rn_step(rt, toks[T + g], NULL, &err), 0);
        tr_writer_add_token(w, T + g, toks[T + g], "g", 1);
    }
    tr_writer_stats st;
    rc = tr_writer_finish(w, TR_STATUS_COMPLETE, &st, &err);
    if (rc) fprintf(stderr, "\n%s\n", err.msg);
    CU_ASSERT_EQUAL(rc, 0);
    free(toks);
    rn_runtime_free(rt);
    rn_model_free(&m);
    return run_id;
}

/* Compare the reader's events (and the SQL view's) with the recorder's,
 * keeping only those sel admits. */
static void check_db(const char *db, int64_t run_id, recorder *rec, const tr_select *sel)
{
    size_t keep = 0;
    for (size_t i = 0; i < rec->n; i++) {
        tr_event *e = &rec->ev[i];
        if (!sel || tr_select_has(sel, e->layer, e->head, e->op)) rec->ev[keep++] = *e;
    }
    qsort(rec->ev, keep, sizeof *rec->ev, cmp_canon);
    rec->n = keep;

    rn_error err = { 0 };
    tr_db *d = NULL;
    CU_ASSERT_EQUAL_FATAL(tr_open_read(db, &d, &err), 0);
    tr_event *ev = NULL;
    size_t n = 0;
    CU_ASSERT_EQUAL(tr_load_events(d, run_id, NULL, &ev, &n, &err), 0);
    CU_ASSERT_EQUAL(n, keep);
    size_t bad = 0;
    for (size_t i = 0; i < n && i < keep; i++) bad += !same_event(&ev[i], &rec->ev[i]);
    CU_ASSERT_EQUAL(bad, 0);
    int64_t cnt = -1;
    CU_ASSERT_EQUAL(tr_count_events(d, run_id, NULL, &cnt, &err), 0);
    CU_ASSERT_EQUAL(cnt, (int64_t)keep);
    tr_run_info ri;
    CU_ASSERT_EQUAL(tr_run_get(d, run_id, &ri, &err), 0);
    CU_ASSERT_STRING_EQUAL(ri.status, "complete");
    CU_ASSERT_EQUAL(ri.n_events, (int64_t)keep);
    CU_ASSERT_STRING_EQUAL(ri.model_hash, "000000001234abcd");
    free(ev);
    tr_close(d);

    /* The same through the `events` view, decoded by SQLite alone. */
    sqlite3 *s;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(db, &s, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(s,
        "SELECT layer, head, pos, op, rank, slot, addr, weight FROM events WHERE run_id = ?"
        " ORDER BY layer, head, pos, op, rank", -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_int64(st, 1, run_id);
    size_t i = 0;
    bad = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        tr_event e = { 0 };
        e.layer = (uint16_t)sqlite3_column_int(st, 0);
        e.head = (uint16_t)sqlite3_column_int(st, 1);
        e.pos = sqlite3_column_int(st, 2);
        e.op = (uint8_t)sqlite3_column_int(st, 3);
        e.rank = (uint16_t)sqlite3_column_int(st, 4);
        e.slot = (uint32_t)sqlite3_column_int64(st, 5);
        e.addr = (uint32_t)sqlite3_column_int64(st, 6);
        e.weight = (float)sqlite3_column_double(st, 7);
        if (i < keep && !same_event(&e, &rec->ev[i])) bad++;
        i++;
    }
    CU_ASSERT_EQUAL(i, keep);
    CU_ASSERT_EQUAL(bad, 0);
    sqlite3_finalize(st);
    /* reads/writes views split the events. */
    size_t nw = 0;
    for (size_t j = 0; j < keep; j++) nw += rec->ev[j].op == 0;
    CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(s,
        "SELECT (SELECT count(*) FROM writes WHERE run_id = ?1),"
        " (SELECT count(*) FROM reads WHERE run_id = ?1)", -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_int64(st, 1, run_id);
    CU_ASSERT_EQUAL(sqlite3_step(st), SQLITE_ROW);
    CU_ASSERT_EQUAL(sqlite3_column_int64(st, 0), (int64_t)nw);
    CU_ASSERT_EQUAL(sqlite3_column_int64(st, 1), (int64_t)(keep - nw));
    sqlite3_finalize(st);
    sqlite3_close(s);
}

TH_TEST(test_exact_events, "database holds exactly the probe's events")
{
    const char *db = th_path("exact.db");
    rn_config c;
    small_config(&c, 8, 8, 3);
    recorder rec;
    int64_t id = traced_run(db, &c, NULL, 40, 6, NULL, &rec, "exact");
    CU_ASSERT_EQUAL(id, 1);
    CU_ASSERT_EQUAL(rec.n, (size_t)(40 + 6) * 3 * 3 * 2 * 8);
    check_db(db, id, &rec, NULL);
    /* Tokens: prompt then generated, in order. */
    rn_error err = { 0 };
    tr_db *d;
    CU_ASSERT_EQUAL_FATAL(tr_open_read(db, &d, &err), 0);
    tr_token *t;
    int64_t nt;
    CU_ASSERT_EQUAL(tr_load_tokens(d, id, &t, &nt, &err), 0);
    CU_ASSERT_EQUAL(nt, 46);
    if (nt == 46) {
        CU_ASSERT_EQUAL(t[0].token_id, 11);
        CU_ASSERT_EQUAL(t[39].generated, 0);
        CU_ASSERT_EQUAL(t[40].generated, 1);
        CU_ASSERT_EQUAL(t[45].pos, 45);
        CU_ASSERT_STRING_EQUAL(t[45].piece, "g");
    }
    free(t);
    tr_head_info *h;
    int nh;
    CU_ASSERT_EQUAL(tr_list_heads(d, id, &h, &nh, &err), 0);
    CU_ASSERT_EQUAL(nh, 9);
    if (nh == 9) {
        CU_ASSERT_EQUAL(h[0].cape, 1);
        CU_ASSERT_EQUAL(h[4].cape, 1);  /* layer 1 head 1 */
        CU_ASSERT_EQUAL(h[5].cape, 0);
    }
    free(h);
    tr_close(d);
    free(rec.ev);
}

/* K = 12 > TR_LANES: each group spans two rows; tiny batches and a short
 * queue make the producer wait on the writer thread. */
TH_TEST(test_wide_k_small_batches, "K > 8 and tiny batches")
{
    const char *db = th_path("widek.db");
    rn_config c;
    small_config(&c, 12, 4, 3);
    tr_writer_opts o = { .queue_batches = 2, .batch_groups = 16, .build_index = 0 };
    recorder rec;
    int64_t id = traced_run(db, &c, NULL, 33, 5, &o, &rec, "widek");
    CU_ASSERT_EQUAL(rec.n, (size_t)38 * 9 * 2 * 12);
    check_db(db, id, &rec, NULL);
    free(rec.ev);
}

TH_TEST(test_selection_and_filters, "layer/head/op selection and reader filters")
{
    const char *db = th_path("sel.db");
    rn_config c;
    small_config(&c, 8, 8, 3);
    rn_error err = { 0 };
    tr_select sel;
    CU_ASSERT_EQUAL(tr_select_parse(&sel, "1-2", "0,2", "r", &c, &err), 0);
    char txt[256];
    tr_select_format(&sel, &c, txt, sizeof txt);
    CU_ASSERT_STRING_EQUAL(txt, "layers=1-2 heads=0,2 ops=r");
    recorder rec;
    int64_t id = traced_run(db, &c, &sel, 20, 3, NULL, &rec, "sel");
    check_db(db, id, &rec, &sel);   /* rec.ev now holds the selected events, sorted */

    /* Reader filter: layer 2, head 2, reads, positions [5, 12). */
    tr_db *d;
    CU_ASSERT_EQUAL_FATAL(tr_open_read(db, &d, &err), 0);
    tr_filter f = { 2, 2, RN_OPS_READ, 5, 12 };
    tr_event *ev;
    size_t n;
    CU_ASSERT_EQUAL(tr_load_events(d, id, &f, &ev, &n, &err), 0);
    size_t want = 0, bad = 0;
    for (size_t i = 0; i < rec.n; i++) {
        tr_event *e = &rec.ev[i];
        if (e->layer == 2 && e->head == 2 && e->op == 1 && e->pos >= 5 && e->pos < 12) {
            if (want < n && !same_event(&ev[want], e)) bad++;
            want++;
        }
    }
    CU_ASSERT_EQUAL(n, want);
    CU_ASSERT_EQUAL(want, 7 * 8);
    CU_ASSERT_EQUAL(bad, 0);
    free(ev);
    /* Streaming iterator agrees with the loader (whole selection). */
    tr_iter *it;
    CU_ASSERT_EQUAL_FATAL(tr_iter_open(d, id, NULL, &it, &err), 0);
    tr_event e;
    size_t k = 0;
    bad = 0;
    while (tr_iter_next(it, &e, &err) == 1) {
        if (k < rec.n && !same_event(&e, &rec.ev[k])) bad++;
        k++;
    }
    tr_iter_close(it);
    CU_ASSERT_EQUAL(k, 2 * 2 * 23 * 8);
    CU_ASSERT_EQUAL(bad, 0);
    tr_close(d);
    free(rec.ev);

    /* Bad selections name the option. */
    CU_ASSERT_EQUAL(tr_select_parse(&sel, "0-3", NULL, NULL, &c, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "--layers"));
    CU_ASSERT_EQUAL(tr_select_parse(&sel, NULL, "x", NULL, &c, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "--heads"));
    CU_ASSERT_EQUAL(tr_select_parse(&sel, NULL, NULL, "q", &c, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "--ops"));
    CU_ASSERT_EQUAL(tr_select_parse(&sel, "2-1", NULL, NULL, &c, &err), RN_EINPUT);
}

/* A second run appends and leaves the first untouched; run 0 = latest. */
TH_TEST(test_many_runs, "many runs per database")
{
    const char *db = th_path("many.db");
    rn_config c;
    small_config(&c, 8, 8, 3);
    recorder r1, r2;
    int64_t a = traced_run(db, &c, NULL, 10, 0, NULL, &r1, "first");
    int64_t b = traced_run(db, &c, NULL, 17, 2, NULL, &r2, "second");
    CU_ASSERT_EQUAL(a, 1);
    CU_ASSERT_EQUAL(b, 2);
    check_db(db, a, &r1, NULL);
    check_db(db, b, &r2, NULL);
    rn_error err = { 0 };
    tr_db *d;
    CU_ASSERT_EQUAL_FATAL(tr_open_read(db, &d, &err), 0);
    tr_run_info *runs;
    int n;
    CU_ASSERT_EQUAL(tr_list_runs(d, &runs, &n, &err), 0);
    CU_ASSERT_EQUAL(n, 2);
    if (n == 2) {
        CU_ASSERT_STRING_EQUAL(runs[0].name, "first");
        CU_ASSERT_EQUAL(runs[0].n_tokens, 10);
        CU_ASSERT_EQUAL(runs[1].n_tokens, 19);
        CU_ASSERT_EQUAL(runs[1].cfg.top_k, 8);
        CU_ASSERT_EQUAL(runs[1].cfg.cape_mask[1], 2u);
        CU_ASSERT(runs[1].end_time >= runs[1].start_time && runs[1].start_time > 1e9);
    }
    free(runs);
    tr_run_info ri;
    CU_ASSERT_EQUAL(tr_run_get(d, 0, &ri, &err), 0);
    CU_ASSERT_EQUAL(ri.run_id, 2);
    CU_ASSERT_EQUAL(tr_run_get(d, 9, &ri, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "no run 9"));
    tr_close(d);
    free(r1.ev);
    free(r2.ev);
}

TH_TEST(test_not_a_trace, "not a trace / other schema version")
{
    rn_error err = { 0 };
    tr_db *d = NULL;
    CU_ASSERT_EQUAL(tr_open_read(th_path("missing.db"), &d, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "missing.db"));
    const char *txt = th_path("text.db");
    th_write_file(txt, "hello, this is not a database at all\n", 38);
    CU_ASSERT_EQUAL(tr_open_read(txt, &d, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "not an SQLite database"));
    /* A valid SQLite file of another application. */
    const char *other = th_path("other.db");
    sqlite3 *s;
    sqlite3_open(other, &s);
    sqlite3_exec(s, "CREATE TABLE t(x); INSERT INTO t VALUES(1);", NULL, NULL, NULL);
    sqlite3_close(s);
    CU_ASSERT_EQUAL(tr_open_read(other, &d, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "not a ramtrace trace"));
    /* The writer refuses to append to it too. */
    rn_config c;
    small_config(&c, 8, 8, 3);
    tr_run_meta meta = { .cfg = &c };
    tr_writer *w = NULL;
    CU_ASSERT_EQUAL(tr_writer_open(other, &meta, NULL, NULL, &w, &err), RN_EINPUT);
    CU_ASSERT_PTR_NULL(w);
    /* A trace of another schema version. */
    const char *ver = th_path("ver.db");
    recorder rec;
    traced_run(ver, &c, NULL, 4, 0, NULL, &rec, "v");
    free(rec.ev);
    sqlite3_open(ver, &s);
    sqlite3_exec(s, "PRAGMA user_version = 99", NULL, NULL, NULL);
    sqlite3_close(s);
    CU_ASSERT_EQUAL(tr_open_read(ver, &d, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "schema version 99"));
    CU_ASSERT_EQUAL(tr_writer_open(ver, &meta, NULL, NULL, &w, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "schema version 99"));
    /* A trace whose heads table names a head outside the run's config. */
    const char *bad = th_path("badhead.db");
    traced_run(bad, &c, NULL, 4, 0, NULL, &rec, "b");
    free(rec.ev);
    sqlite3_open(bad, &s);
    sqlite3_exec(s, "INSERT INTO heads VALUES(1, 200, 0, 0, 512)", NULL, NULL, NULL);
    sqlite3_close(s);
    CU_ASSERT_EQUAL_FATAL(tr_open_read(bad, &d, &err), 0);
    tr_head_info *h = NULL;
    int nh = -1;
    CU_ASSERT_EQUAL(tr_list_heads(d, 1, &h, &nh, &err), RN_EINPUT);
    CU_ASSERT_PTR_NULL(h);
    CU_ASSERT_EQUAL(nh, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "outside"));
    tr_close(d);
}
