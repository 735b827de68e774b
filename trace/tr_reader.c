/* tr_reader.c — reading trace databases back (tr_reader.h).
 *
 * Events are read from the event_groups table directly (not through the
 * `events` view) and expanded into ranks here, in canonical order
 * (layer, head, pos, op, rank).  Queries put the run id in the SQL text as a
 * literal so SQLite can use the run's partial index.
 *
 * A trace file is input like any other: every value of an event row is
 * checked against its run's header (layers, heads, M, K, tokens) before it
 * is narrowed into a tr_event, and a violation is a one-line "corrupt trace"
 * error (RN_EINPUT), never a truncated value or an overflow.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tr_reader.h"
#include "tr_schema.h"

struct tr_db {
    sqlite3 *db;
    char *path;
};

struct tr_iter {
    tr_db *db;
    sqlite3_stmt *st;
    int have_row;      /* st holds a row whose lanes are being handed out */
    int lane, n;
    tr_event base;     /* layer, head, pos, op of the current row */
    int r0;
    int64_t cape_m;
    /* the previous row's (layer, head, pos, op) and end rank r0 + n: rows
     * come sorted, so one that repeats ranks of it is a duplicated event */
    int have_prev;
    int64_t prev[4], prev_end;
    /* the run's header, for checking every row */
    int64_t run_id, L, H, M, K, n_tokens;
};

int tr_open_read(const char *path, tr_db **out, rn_error *err)
{
    *out = NULL;
    tr_db *d = calloc(1, sizeof *d);
    if (!d || !(d->path = strdup(path))) {
        free(d);
        return rn_seterr(err, RN_ENOMEM, "out of memory");
    }
    int rc = tr_schema_open_read(path, &d->db, err);
    if (rc) { free(d->path); free(d); return rc; }
    *out = d;
    return RN_OK;
}

void tr_close(tr_db *db)
{
    if (!db) return;
    sqlite3_close(db->db);
    free(db->path);
    free(db);
}

static int prep(tr_db *d, const char *sql, sqlite3_stmt **st, rn_error *err)
{
    int rc = sqlite3_prepare_v2(d->db, sql, -1, st, NULL);
    if (rc != SQLITE_OK) return tr_sqlerr(d->db, rc, d->path, "query failed", err);
    return RN_OK;
}

static void copy_col(sqlite3_stmt *st, int col, char *dst, size_t cap)
{
    const unsigned char *s = sqlite3_column_text(st, col);
    snprintf(dst, cap, "%s", s ? (const char *)s : "");
}

/* Count one run's committed tokens and events (for runs whose row was never
 * finished, e.g. after the writer was killed). */
static int count_run(tr_db *d, int64_t run_id, int64_t *tokens, int64_t *events, rn_error *err)
{
    char sql[256];
    sqlite3_stmt *st;
    snprintf(sql, sizeof sql,
             "SELECT (SELECT count(*) FROM tokens WHERE run_id = %lld),"
             " (SELECT coalesce(sum(n), 0) FROM event_groups WHERE run_id = %lld)",
             (long long)run_id, (long long)run_id);
    int rc = prep(d, sql, &st, err);
    if (rc) return rc;
    int src = sqlite3_step(st);
    if (src == SQLITE_ROW) {
        *tokens = sqlite3_column_int64(st, 0);
        *events = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    if (src != SQLITE_ROW) return tr_sqlerr(d->db, src, d->path, "counting events", err);
    return RN_OK;
}

#define RUN_COLS "run_id, name, status, model_path, model_hash, config, n_tokens, n_events," \
                 " start_time, coalesce(end_time, 0)"

/* Fill *r from a row of RUN_COLS. */
static int read_run(tr_db *d, sqlite3_stmt *st, tr_run_info *r, rn_error *err)
{
    memset(r, 0, sizeof *r);
    r->run_id = sqlite3_column_int64(st, 0);
    copy_col(st, 1, r->name, sizeof r->name);
    copy_col(st, 2, r->status, sizeof r->status);
    copy_col(st, 3, r->model_path, sizeof r->model_path);
    copy_col(st, 4, r->model_hash, sizeof r->model_hash);
    const char *cfg = (const char *)sqlite3_column_text(st, 5);
    r->n_tokens = sqlite3_column_int64(st, 6);
    r->n_events = sqlite3_column_int64(st, 7);
    r->start_time = sqlite3_column_double(st, 8);
    r->end_time = sqlite3_column_double(st, 9);
    rn_config_default(&r->cfg);
    char origin[1200];
    snprintf(origin, sizeof origin, "%s: run %lld config", d->path, (long long)r->run_id);
    int rc = rn_config_parse_text(&r->cfg, cfg ? cfg : "", origin, NULL, NULL, err);
    if (!rc) rc = rn_config_validate(&r->cfg, err);
    if (rc) {
        char why[RN_ERRMSG_LEN] = "";
        if (err) memcpy(why, err->msg, sizeof why); /* err->msg cannot be both format argument and output */
        return rn_seterr(err, RN_EINPUT, "%s: run %lld has an invalid config: %s", d->path,
                         (long long)r->run_id, why);
    }
    if (!strcmp(r->status, "running"))
        rc = count_run(d, r->run_id, &r->n_tokens, &r->n_events, err);
    /* positions are int32: a count outside [0, 2^31] would let a position
     * pass the range check and be truncated (or overflow count - 1) */
    if (!rc && (r->n_tokens < 0 || r->n_tokens > (int64_t)INT32_MAX + 1 || r->n_events < 0))
        rc = rn_seterr(err, RN_EINPUT, "%s: corrupt trace: run %lld claims %lld tokens and %lld events "
                       "(at most 2^31 tokens)", d->path, (long long)r->run_id, (long long)r->n_tokens,
                       (long long)r->n_events);
    return rc;
}

int tr_list_runs(tr_db *d, tr_run_info **runs, int *n, rn_error *err)
{
    *runs = NULL;
    *n = 0;
    sqlite3_stmt *st;
    int rc = prep(d, "SELECT " RUN_COLS " FROM runs ORDER BY run_id", &st, err);
    if (rc) return rc;
    int cap = 0, src;
    tr_run_info *a = NULL;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 8;
            tr_run_info *b = realloc(a, sizeof *a * cap);
            if (!b) { rc = rn_seterr(err, RN_ENOMEM, "out of memory"); break; }
            a = b;
        }
        if ((rc = read_run(d, st, &a[*n], err))) break;
        (*n)++;
    }
    sqlite3_finalize(st);
    if (!rc && src != SQLITE_DONE) rc = tr_sqlerr(d->db, src, d->path, "listing runs", err);
    if (rc) { free(a); *n = 0; return rc; }
    *runs = a;
    return RN_OK;
}

int tr_run_get(tr_db *d, int64_t run_id, tr_run_info *out, rn_error *err)
{
    char sql[256];
    if (run_id > 0)
        snprintf(sql, sizeof sql, "SELECT " RUN_COLS " FROM runs WHERE run_id = %lld", (long long)run_id);
    else
        snprintf(sql, sizeof sql, "SELECT " RUN_COLS " FROM runs ORDER BY run_id DESC LIMIT 1");
    sqlite3_stmt *st;
    int rc = prep(d, sql, &st, err);
    if (rc) return rc;
    int src = sqlite3_step(st);
    if (src == SQLITE_ROW) rc = read_run(d, st, out, err);
    else if (src == SQLITE_DONE)
        rc = run_id > 0 ? rn_seterr(err, RN_EINPUT, "%s: no run %lld", d->path, (long long)run_id)
                        : rn_seterr(err, RN_EINPUT, "%s: the trace holds no runs", d->path);
    else rc = tr_sqlerr(d->db, src, d->path, "reading runs", err);
    sqlite3_finalize(st);
    return rc;
}

/* Resolve run_id 0 to the latest run and check the run exists. */
static int resolve_run(tr_db *d, int64_t *run_id, rn_error *err)
{
    tr_run_info r;
    int rc = tr_run_get(d, *run_id, &r, err);
    if (!rc) *run_id = r.run_id;
    return rc;
}

int tr_list_heads(tr_db *d, int64_t run_id, tr_head_info **heads, int *n, rn_error *err)
{
    *heads = NULL;
    *n = 0;
    tr_run_info run;
    int rc = tr_run_get(d, run_id, &run, err);
    if (rc) return rc;
    run_id = run.run_id;
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT layer, head, cape FROM heads WHERE run_id = %lld"
             " ORDER BY layer, head", (long long)run_id);
    sqlite3_stmt *st;
    if ((rc = prep(d, sql, &st, err))) return rc;
    int cap = 0, src;
    tr_head_info *a = NULL;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            tr_head_info *b = realloc(a, sizeof *a * cap);
            if (!b) { rc = rn_seterr(err, RN_ENOMEM, "out of memory"); break; }
            a = b;
        }
        a[*n].layer = sqlite3_column_int(st, 0);
        a[*n].head = sqlite3_column_int(st, 1);
        a[*n].cape = sqlite3_column_int(st, 2);
        if (a[*n].layer < 0 || a[*n].layer >= run.cfg.n_layers || a[*n].head < 0 ||
            a[*n].head >= run.cfg.n_heads) {
            rc = rn_seterr(err, RN_EINPUT, "%s: run %lld lists head (layer %d, head %d) outside its config",
                           d->path, (long long)run_id, a[*n].layer, a[*n].head);
            break;
        }
        (*n)++;
    }
    sqlite3_finalize(st);
    if (!rc && src != SQLITE_DONE) rc = tr_sqlerr(d->db, src, d->path, "listing heads", err);
    if (rc) { free(a); *n = 0; return rc; }
    *heads = a;
    return RN_OK;
}

int tr_load_tokens(tr_db *d, int64_t run_id, tr_token **toks, int64_t *n, rn_error *err)
{
    *toks = NULL;
    *n = 0;
    int rc = resolve_run(d, &run_id, err);
    if (rc) return rc;
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT pos, token_id, piece, phase FROM tokens WHERE run_id = %lld"
             " ORDER BY pos", (long long)run_id);
    sqlite3_stmt *st;
    if ((rc = prep(d, sql, &st, err))) return rc;
    int64_t cap = 0;
    int src;
    tr_token *a = NULL;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 256;
            tr_token *b = realloc(a, sizeof *a * cap);
            if (!b) { rc = rn_seterr(err, RN_ENOMEM, "out of memory"); break; }
            a = b;
        }
        tr_token *t = &a[*n];
        t->pos = (int32_t)sqlite3_column_int64(st, 0);
        t->token_id = sqlite3_column_int(st, 1);
        copy_col(st, 2, t->piece, sizeof t->piece);
        const unsigned char *ph = sqlite3_column_text(st, 3);
        t->generated = ph && !strcmp((const char *)ph, "generated");
        (*n)++;
    }
    sqlite3_finalize(st);
    if (!rc && src != SQLITE_DONE) rc = tr_sqlerr(d->db, src, d->path, "loading tokens", err);
    if (rc) { free(a); *n = 0; return rc; }
    *toks = a;
    return RN_OK;
}

/* The WHERE clause for a run and filter (integers only, so literals are
 * safe). */
static void where_clause(int64_t run_id, const tr_filter *f, char *buf, size_t cap)
{
    tr_filter all = tr_filter_all();
    if (!f) f = &all;
    size_t n = (size_t)snprintf(buf, cap, " WHERE run_id = %lld", (long long)run_id);
    if (f->layer >= 0) n += snprintf(buf + n, cap - n, " AND layer = %d", f->layer);
    if (f->head >= 0) n += snprintf(buf + n, cap - n, " AND head = %d", f->head);
    if ((f->ops & RN_OPS_BOTH) == 0) n += snprintf(buf + n, cap - n, " AND 0");
    else if ((f->ops & RN_OPS_BOTH) != RN_OPS_BOTH)
        n += snprintf(buf + n, cap - n, " AND op = %d", rn_ops_has(f->ops, RN_OP_READ) ? RN_OP_READ : RN_OP_WRITE);
    if (f->pos_lo > 0) n += snprintf(buf + n, cap - n, " AND pos >= %lld", (long long)f->pos_lo);
    if (f->pos_hi >= 0) snprintf(buf + n, cap - n, " AND pos < %lld", (long long)f->pos_hi);
}

int tr_count_events(tr_db *d, int64_t run_id, const tr_filter *f, int64_t *n, rn_error *err)
{
    *n = 0;
    int rc = resolve_run(d, &run_id, err);
    if (rc) return rc;
    char where[512], sql[700];
    where_clause(run_id, f, where, sizeof where);
    snprintf(sql, sizeof sql, "SELECT coalesce(sum(n), 0) FROM event_groups%s", where);
    sqlite3_stmt *st;
    if ((rc = prep(d, sql, &st, err))) return rc;
    int src = sqlite3_step(st);
    if (src == SQLITE_ROW) *n = sqlite3_column_int64(st, 0);
    else rc = tr_sqlerr(d->db, src, d->path, "counting events", err);
    sqlite3_finalize(st);
    return rc;
}

int tr_iter_open(tr_db *d, int64_t run_id, const tr_filter *f, tr_iter **out, rn_error *err)
{
    *out = NULL;
    tr_run_info run;
    int rc = tr_run_get(d, run_id, &run, err);
    if (rc) return rc;
    run_id = run.run_id;
    tr_iter *it = calloc(1, sizeof *it);
    if (!it) return rn_seterr(err, RN_ENOMEM, "out of memory");
    it->run_id = run_id;
    it->L = run.cfg.n_layers;
    it->H = run.cfg.n_heads;
    it->M = rn_config_slots(&run.cfg);
    it->K = run.cfg.top_k;
    it->n_tokens = run.n_tokens;
    char where[512], sql[1200];
    size_t n = (size_t)snprintf(sql, sizeof sql, "SELECT layer, head, pos, op, r0, n, cape_m");
    for (int i = 0; i < TR_LANES; i++) n += snprintf(sql + n, sizeof sql - n, ", s%d, w%d", i, i);
    where_clause(run_id, f, where, sizeof where);
    snprintf(sql + n, sizeof sql - n, " FROM event_groups%s ORDER BY layer, head, pos, op, r0", where);
    it->db = d;
    if ((rc = prep(d, sql, &it->st, err))) { free(it); return rc; }
    *out = it;
    return RN_OK;
}

/* One-line error for a row value outside the run's header. */
static int corrupt(const tr_iter *it, const char *what, int64_t v, int64_t lo, int64_t hi, rn_error *err)
{
    return rn_seterr(err, RN_EINPUT,
                     "%s: corrupt trace: run %lld has an event row (layer %d, head %d, pos %d) with %s %lld "
                     "outside [%lld, %lld]", it->db->path, (long long)it->run_id, it->base.layer, it->base.head,
                     it->base.pos, what, (long long)v, (long long)lo, (long long)hi);
}

/* Read the group columns of the current row into it->base, r0, n, cape_m,
 * checking each against the run's header. */
static int read_group(tr_iter *it, rn_error *err)
{
    sqlite3_stmt *st = it->st;
    int64_t layer = sqlite3_column_int64(st, 0), head = sqlite3_column_int64(st, 1);
    int64_t pos = sqlite3_column_int64(st, 2), op = sqlite3_column_int64(st, 3);
    int64_t r0 = sqlite3_column_int64(st, 4), n = sqlite3_column_int64(st, 5);
    int64_t cape_m = sqlite3_column_int64(st, 6);
    static const char *const names[] = { "layer", "head", "pos", "op", "r0", "n", "cape_m" };
    for (int c = 0; c < 7; c++)
        if (sqlite3_column_type(st, c) != SQLITE_INTEGER)
            return rn_seterr(err, RN_EINPUT, "%s: corrupt trace: run %lld has an event row whose %s is not an integer",
                             it->db->path, (long long)it->run_id, names[c]);
    it->base.layer = (uint16_t)(layer >= 0 && layer < it->L ? layer : 0);
    it->base.head = (uint16_t)(head >= 0 && head < it->H ? head : 0);
    it->base.pos = (int32_t)(pos >= 0 && pos < it->n_tokens ? pos : -1);
    if (layer < 0 || layer >= it->L) return corrupt(it, "layer", layer, 0, it->L - 1, err);
    if (head < 0 || head >= it->H) return corrupt(it, "head", head, 0, it->H - 1, err);
    if (pos < 0 || pos >= it->n_tokens) return corrupt(it, "position", pos, 0, it->n_tokens - 1, err);
    if (op != RN_OP_WRITE && op != RN_OP_READ) return corrupt(it, "op", op, RN_OP_WRITE, RN_OP_READ, err);
    if (n < 1 || n > TR_LANES) return corrupt(it, "lane count", n, 1, TR_LANES, err);
    if (r0 < 0 || r0 + n > it->K) return corrupt(it, "first rank", r0, 0, it->K - n, err);
    if (cape_m != 0 && cape_m != it->M) return corrupt(it, "CAPE modulus", cape_m, 0, it->M, err);
    int64_t key[4] = { layer, head, pos, op };
    if (it->have_prev && !memcmp(key, it->prev, sizeof key) && r0 < it->prev_end)
        return rn_seterr(err, RN_EINPUT, "%s: corrupt trace: run %lld has rank %lld of (layer %d, head %d, pos %d, "
                         "op %d) twice (a duplicated event row)", it->db->path, (long long)it->run_id,
                         (long long)r0, it->base.layer, it->base.head, it->base.pos, (int)op);
    memcpy(it->prev, key, sizeof key);
    it->prev_end = r0 + n;
    it->have_prev = 1;
    it->base.op = (uint8_t)op;
    it->r0 = (int)r0;
    it->n = (int)n;
    it->cape_m = cape_m;
    return RN_OK;
}

int tr_iter_next(tr_iter *it, tr_event *ev, rn_error *err)
{
    while (!it->have_row || it->lane >= it->n) {
        int src = sqlite3_step(it->st);
        if (src == SQLITE_DONE) return 0;
        if (src != SQLITE_ROW) return tr_sqlerr(it->db->db, src, it->db->path, "reading events", err);
        it->have_row = 0;
        int rc = read_group(it, err);
        if (rc) return rc;
        it->lane = 0;
        it->have_row = 1;
    }
    int i = it->lane++;
    *ev = it->base;
    int wt = sqlite3_column_type(it->st, 8 + 2 * i);
    if (sqlite3_column_type(it->st, 7 + 2 * i) != SQLITE_INTEGER || (wt != SQLITE_FLOAT && wt != SQLITE_INTEGER))
        return rn_seterr(err, RN_EINPUT, "%s: corrupt trace: run %lld has an event (layer %d, head %d, pos %d) "
                         "whose slot or weight of rank %d is missing or not a number", it->db->path,
                         (long long)it->run_id, ev->layer, ev->head, ev->pos, it->r0 + i);
    int64_t slot = sqlite3_column_int64(it->st, 7 + 2 * i);
    double w = sqlite3_column_double(it->st, 8 + 2 * i);
    if (slot < 0 || slot >= it->M) return corrupt(it, "slot", slot, 0, it->M - 1, err);
    if (!(w >= 0 && w <= 1))   /* also NaN */
        return rn_seterr(err, RN_EINPUT, "%s: corrupt trace: run %lld has an event (layer %d, head %d, pos %d) "
                         "whose weight %g is not in [0, 1]", it->db->path, (long long)it->run_id, ev->layer,
                         ev->head, ev->pos, w);
    ev->slot = (uint32_t)slot;
    /* slot < M <= 2^32 and pos < 2^31: the sum fits in int64 */
    ev->addr = it->cape_m > 0 ? (uint32_t)((slot + ev->pos) % it->cape_m) : (uint32_t)slot;
    ev->weight = (float)w;
    ev->rank = (uint16_t)(it->r0 + i);
    return 1;
}

void tr_iter_close(tr_iter *it)
{
    if (!it) return;
    sqlite3_finalize(it->st);
    free(it);
}

int tr_load_events(tr_db *d, int64_t run_id, const tr_filter *f, tr_event **ev, size_t *n,
                   rn_error *err)
{
    *ev = NULL;
    *n = 0;
    tr_iter *it;
    int rc = tr_iter_open(d, run_id, f, &it, err);
    if (rc) return rc;
    size_t cap = 0;
    tr_event *a = NULL;
    tr_event e;
    while ((rc = tr_iter_next(it, &e, err)) == 1) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 4096;
            tr_event *b = realloc(a, sizeof *a * cap);
            if (!b) { rc = rn_seterr(err, RN_ENOMEM, "out of memory loading events"); break; }
            a = b;
        }
        a[(*n)++] = e;
    }
    tr_iter_close(it);
    if (rc) { free(a); *n = 0; return rc; }
    *ev = a;
    return RN_OK;
}
