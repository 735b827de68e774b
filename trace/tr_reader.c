/* tr_reader.c — reading trace databases back (tr_reader.h).
 *
 * Events are decoded from the event_blocks rows directly (not through the
 * `events` virtual table), in canonical order (layer, head, pos, op, rank):
 * the blocks of a run are read in the order of the block index (layer,
 * head, pos0) and each block's entries are already in (pos, op, rank)
 * order (tr_block.h).  Queries put the run id in the SQL text as a literal.
 *
 * A trace file is input like any other: every block header is checked
 * against its run's header (layers, heads, M, K, tokens, BLOB sizes), every
 * slot against M and every weight against [0, 1] before it is narrowed
 * into a tr_event, and a violation is a one-line "corrupt trace" error
 * (RN_EINPUT), never a truncated value or an overflow.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tr_block.h"
#include "tr_reader.h"
#include "tr_schema.h"

struct tr_db {
    sqlite3 *db;
    char *path;
};

struct tr_iter {
    tr_db *db;
    sqlite3_stmt *st;
    int have_row;      /* st holds a block whose entries are being handed out */
    int done;          /* st returned its last row (stepping it again would restart it) */
    int op_only;       /* -1: both ops, else the one op the filter keeps */
    int64_t lo, hi;    /* positions [lo, hi) of the filter */
    /* the current block */
    int64_t layer, head, pos0, npos, ops, cape_m;
    int nops;
    const uint8_t *slots, *weights;
    int64_t e, n_ent;  /* next entry, entries */
    /* the previous block's (layer, head) and end position: blocks come
     * sorted, so one that starts before that end repeats positions */
    int have_prev;
    int64_t prev_layer, prev_head, prev_end;
    int64_t run_id;
    tr_block_run run;  /* the run's header, for checking every block */
    uint64_t cape_mask[RN_MAX_LAYERS]; /* the run's CAPE masks (run.cape_mask points here) */
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
    tr_schema_close_read(db->db, db->path);
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
             " (SELECT coalesce(sum(n), 0) FROM event_blocks WHERE run_id = %lld)",
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
                 " start_time, coalesce(end_time, 0), weight_format"

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
    const char *wf = (const char *)sqlite3_column_text(st, 10);
    r->weight_format = tr_weights_parse(wf);
    if (r->weight_format < 0)
        return rn_seterr(err, RN_EINPUT, "%s: corrupt trace: run %lld has weight_format '%s' (not f32 or f16)",
                         d->path, (long long)r->run_id, wf ? wf : "NULL");
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
    return tr_load_tokens_range(d, run_id, 0, -1, toks, n, err);
}

int tr_load_tokens_range(tr_db *d, int64_t run_id, int64_t lo, int64_t hi, tr_token **toks, int64_t *n,
                         rn_error *err)
{
    *toks = NULL;
    *n = 0;
    int rc = resolve_run(d, &run_id, err);
    if (rc) return rc;
    char sql[320];
    snprintf(sql, sizeof sql, "SELECT pos, token_id, piece, phase FROM tokens WHERE run_id = %lld"
             " AND pos >= %lld%s ORDER BY pos", (long long)run_id, (long long)lo, hi >= 0 ? " AND pos < ?1" : "");
    sqlite3_stmt *st;
    if ((rc = prep(d, sql, &st, err))) return rc;
    if (hi >= 0) sqlite3_bind_int64(st, 1, hi);
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

int tr_load_chunks(tr_db *d, int64_t run_id, tr_chunk **chunks, int *n, rn_error *err)
{
    *chunks = NULL;
    *n = 0;
    int rc = resolve_run(d, &run_id, err);
    if (rc) return rc;
    sqlite3_stmt *st;
    if ((rc = prep(d, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'prefill_chunks'",
                   &st, err)))
        return rc;
    int have = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) > 0;
    sqlite3_finalize(st);
    if (!have) return RN_OK;
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT pos0, n FROM prefill_chunks WHERE run_id = %lld ORDER BY pos0",
             (long long)run_id);
    if ((rc = prep(d, sql, &st, err))) return rc;
    int cap = 0, src;
    tr_chunk *a = NULL;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        tr_chunk c = { sqlite3_column_int64(st, 0), 0 };
        sqlite3_int64 len = sqlite3_column_int64(st, 1);
        if (sqlite3_column_type(st, 0) != SQLITE_INTEGER || sqlite3_column_type(st, 1) != SQLITE_INTEGER ||
            c.pos0 < 0 || c.pos0 > INT32_MAX || len < 2 || len > INT32_MAX - c.pos0 ||
            (*n && c.pos0 < a[*n - 1].pos0 + a[*n - 1].n)) {
            rc = rn_seterr(err, RN_EINPUT, "%s: corrupt trace: run %lld has a bad prefill chunk at position %lld",
                           d->path, (long long)run_id, (long long)c.pos0);
            break;
        }
        c.n = (int32_t)len;
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            tr_chunk *b = realloc(a, sizeof *a * (size_t)cap);
            if (!b) { rc = rn_seterr(err, RN_ENOMEM, "out of memory"); break; }
            a = b;
        }
        a[(*n)++] = c;
    }
    sqlite3_finalize(st);
    if (!rc && src != SQLITE_DONE) rc = tr_sqlerr(d->db, src, d->path, "loading prefill chunks", err);
    if (rc) { free(a); *n = 0; return rc; }
    *chunks = a;
    return RN_OK;
}

/* The WHERE clause over event_blocks for a run and filter (integers only,
 * so literals are safe). */
static void where_clause(int64_t run_id, const tr_filter *f, char *buf, size_t cap)
{
    tr_filter all = tr_filter_all();
    if (!f) f = &all;
    size_t n = (size_t)snprintf(buf, cap, " WHERE run_id = %lld", (long long)run_id);
    if (f->layer >= 0) n += snprintf(buf + n, cap - n, " AND layer = %d", f->layer);
    if (f->head >= 0) n += snprintf(buf + n, cap - n, " AND head = %d", f->head);
    if ((f->ops & RN_OPS_BOTH) == 0) n += snprintf(buf + n, cap - n, " AND 0");
    else if ((f->ops & RN_OPS_BOTH) != RN_OPS_BOTH)
        n += snprintf(buf + n, cap - n, " AND (ops & %d) != 0", f->ops & RN_OPS_BOTH);
    if (f->pos_hi >= 0) n += snprintf(buf + n, cap - n, " AND pos0 < %lld", (long long)f->pos_hi);
    if (f->pos_lo > 0) snprintf(buf + n, cap - n, " AND pos0 + npos > %lld", (long long)f->pos_lo);
}

/* Sum the events of the blocks of run that f selects, clipped to f's
 * positions, from the block headers only (the BLOBs are not read): the
 * total into *n and, when per_head is not NULL, each (layer, head)'s into
 * per_head[layer · H + head] (zeroed first). */
static int count_blocks(tr_db *d, int64_t run_id, const tr_filter *f, int64_t *n, int64_t *per_head,
                        rn_error *err)
{
    *n = 0;
    tr_run_info run;
    int rc = tr_run_get(d, run_id, &run, err);
    if (rc) return rc;
    tr_filter all = tr_filter_all();
    if (!f) f = &all;
    const int L = run.cfg.n_layers, H = run.cfg.n_heads;
    if (per_head) memset(per_head, 0, sizeof *per_head * (size_t)L * (size_t)H);
    char where[512], sql[700];
    where_clause(run.run_id, f, where, sizeof where);
    snprintf(sql, sizeof sql, "SELECT pos0, npos, ops, layer, head FROM event_blocks%s", where);
    sqlite3_stmt *st;
    if ((rc = prep(d, sql, &st, err))) return rc;
    int64_t lo = f->pos_lo > 0 ? f->pos_lo : 0, hi = f->pos_hi >= 0 ? f->pos_hi : INT64_MAX, total = 0;
    int src;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t p0 = sqlite3_column_int64(st, 0), np = sqlite3_column_int64(st, 1);
        int ops = (int)(sqlite3_column_int64(st, 2) & f->ops & RN_OPS_BOTH);
        if (np < 0 || np > (1 << 24)) continue;  /* a corrupt row: the iterator reports it */
        int64_t a = p0 > lo ? p0 : lo, b = p0 + np < hi ? p0 + np : hi;
        if (b <= a) continue;
        int64_t k = (b - a) * tr_block_nops(ops) * run.cfg.top_k;
        total += k;
        int64_t l = sqlite3_column_int64(st, 3), h = sqlite3_column_int64(st, 4);
        if (per_head && l >= 0 && l < L && h >= 0 && h < H) per_head[l * H + h] += k;
    }
    if (src != SQLITE_DONE) rc = tr_sqlerr(d->db, src, d->path, "counting events", err);
    sqlite3_finalize(st);
    if (!rc) *n = total;
    return rc;
}

int tr_count_events(tr_db *d, int64_t run_id, const tr_filter *f, int64_t *n, rn_error *err)
{
    return count_blocks(d, run_id, f, n, NULL, err);
}

int tr_count_events_by_head(tr_db *d, int64_t run_id, int64_t *per_head, rn_error *err)
{
    int64_t n;
    return count_blocks(d, run_id, NULL, &n, per_head, err);
}

int tr_check_block_heads(tr_db *d, int64_t run_id, rn_error *err)
{
    tr_run_info run;
    int rc = tr_run_get(d, run_id, &run, err);
    if (rc) return rc;
    char sql[400];
    snprintf(sql, sizeof sql, "SELECT layer, head FROM event_blocks WHERE run_id = %lld AND"
             " (typeof(layer) != 'integer' OR typeof(head) != 'integer' OR layer < 0 OR layer >= %d"
             " OR head < 0 OR head >= %d) LIMIT 1", (long long)run.run_id, run.cfg.n_layers, run.cfg.n_heads);
    sqlite3_stmt *st;
    if ((rc = prep(d, sql, &st, err))) return rc;
    int src = sqlite3_step(st);
    if (src == SQLITE_ROW) {
        char l[32], h[32];
        copy_col(st, 0, l, sizeof l);
        copy_col(st, 1, h, sizeof h);
        rc = rn_seterr(err, RN_EINPUT, "%s: corrupt trace: run %lld has an event block of (layer %s, head %s), "
                       "outside its %d layers x %d heads", d->path, (long long)run.run_id, l, h,
                       run.cfg.n_layers, run.cfg.n_heads);
    } else if (src != SQLITE_DONE) rc = tr_sqlerr(d->db, src, d->path, "checking event blocks", err);
    sqlite3_finalize(st);
    return rc;
}

/* One-line error for a finished run whose rows disagree with its counts. */
static int short_run(tr_db *d, const tr_run_info *run, const char *why, rn_error *err)
{
    return rn_seterr(err, RN_EINPUT, "%s: corrupt trace: run %lld is %s but %s; `ramtrace repair %s --run %lld` "
                     "cuts it to its complete positions", d->path, (long long)run->run_id, run->status, why,
                     d->path, (long long)run->run_id);
}

int tr_check_run(tr_db *d, const tr_run_info *run, rn_error *err)
{
    if (!strcmp(run->status, "running")) return RN_OK;
    int rc = tr_check_block_heads(d, run->run_id, err);
    if (rc) return rc;
    char sql[400], why[200];
    sqlite3_stmt *st;
    int64_t id = run->run_id, T = run->n_tokens;
    /* tokens: positions 0..T-1 (the primary key makes them distinct) */
    snprintf(sql, sizeof sql, "SELECT count(*), coalesce(min(pos), 0), coalesce(max(pos), -1),"
             " (SELECT selection FROM runs WHERE run_id = %lld) FROM tokens WHERE run_id = %lld",
             (long long)id, (long long)id);
    if ((rc = prep(d, sql, &st, err))) return rc;
    int src = sqlite3_step(st);
    int64_t nt = 0, lo = 0, hi = -1;
    int ops = RN_OPS_BOTH;
    if (src == SQLITE_ROW) {
        nt = sqlite3_column_int64(st, 0);
        lo = sqlite3_column_int64(st, 1);
        hi = sqlite3_column_int64(st, 2);
        ops = tr_selection_ops((const char *)sqlite3_column_text(st, 3));
    }
    sqlite3_finalize(st);
    if (src != SQLITE_ROW) return tr_sqlerr(d->db, src, d->path, "checking the run", err);
    if (nt != T || lo != 0 || hi != T - 1) {
        snprintf(why, sizeof why, "records %lld tokens and holds %lld tokens rows (positions %lld..%lld)",
                 (long long)T, (long long)nt, (long long)lo, (long long)hi);
        return short_run(d, run, why, err);
    }
    /* blocks against heads, both sorted by (layer, head) */
    tr_head_info *heads;
    int nh;
    if ((rc = tr_list_heads(d, id, &heads, &nh, err))) return rc;
    snprintf(sql, sizeof sql, "SELECT layer, head, pos0, npos, ops, n FROM event_blocks WHERE run_id = %lld"
             " ORDER BY layer, head, pos0", (long long)id);
    if ((rc = prep(d, sql, &st, err))) { free(heads); return rc; }
    int h = 0;
    int64_t end = 0, sum = 0;  /* end: positions covered so far of heads[h] */
    why[0] = 0;
    while (!why[0] && (src = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t l = sqlite3_column_int64(st, 0), hd = sqlite3_column_int64(st, 1);
        int64_t p0 = sqlite3_column_int64(st, 2), np = sqlite3_column_int64(st, 3);
        int64_t bops = sqlite3_column_int64(st, 4), n = sqlite3_column_int64(st, 5);
        /* close the heads before this block's */
        while (h < nh && (heads[h].layer < l || (heads[h].layer == l && heads[h].head < hd))) {
            if (end != T) {
                snprintf(why, sizeof why, "the blocks of (layer %d, head %d) hold positions 0..%lld of its %lld",
                         heads[h].layer, heads[h].head, (long long)end - 1, (long long)T);
                break;
            }
            h++;
            end = 0;
        }
        if (why[0]) break;
        if (h == nh || heads[h].layer != l || heads[h].head != hd)
            snprintf(why, sizeof why, "holds a block of (layer %lld, head %lld), a head it did not trace",
                     (long long)l, (long long)hd);
        else if (p0 != end)
            snprintf(why, sizeof why, "the blocks of (layer %lld, head %lld) %s position %lld", (long long)l,
                     (long long)hd, p0 < end ? "repeat" : "skip to", (long long)(p0 < end ? p0 : end));
        else if (bops != ops)
            snprintf(why, sizeof why, "a block of (layer %lld, head %lld) at position %lld holds ops %lld of %d",
                     (long long)l, (long long)hd, (long long)p0, (long long)bops, ops);
        else if (np < 1 || np > T - end)
            snprintf(why, sizeof why, "a block of (layer %lld, head %lld) at position %lld claims %lld positions",
                     (long long)l, (long long)hd, (long long)p0, (long long)np);
        else if (n != np * tr_block_nops(ops) * run->cfg.top_k)  /* < 2^31 * 2 * 2^31: no overflow */
            snprintf(why, sizeof why, "a block of (layer %lld, head %lld) at position %lld claims %lld events",
                     (long long)l, (long long)hd, (long long)p0, (long long)n);
        else {
            end += np;
            sum += n;
        }
    }
    if (!why[0] && src != SQLITE_ROW && src != SQLITE_DONE) rc = tr_sqlerr(d->db, src, d->path, "checking the run", err);
    sqlite3_finalize(st);
    /* the heads after the last block (a head without any block when T > 0) */
    for (; !rc && !why[0] && h < nh; h++, end = 0)
        if (end != T)
            snprintf(why, sizeof why, "the blocks of (layer %d, head %d) hold positions 0..%lld of its %lld",
                     heads[h].layer, heads[h].head, (long long)end - 1, (long long)T);
    free(heads);
    if (rc) return rc;
    if (!why[0] && sum != run->n_events)
        snprintf(why, sizeof why, "records %lld events and its blocks hold %lld", (long long)run->n_events,
                 (long long)sum);
    return why[0] ? short_run(d, run, why, err) : RN_OK;
}

int tr_iter_open(tr_db *d, int64_t run_id, const tr_filter *f, tr_iter **out, rn_error *err)
{
    *out = NULL;
    tr_run_info run;
    int rc = tr_run_get(d, run_id, &run, err);
    if (rc) return rc;
    run_id = run.run_id;
    tr_filter all = tr_filter_all();
    if (!f) f = &all;
    tr_iter *it = calloc(1, sizeof *it);
    if (!it) return rn_seterr(err, RN_ENOMEM, "out of memory");
    it->run_id = run_id;
    it->run.L = run.cfg.n_layers;
    it->run.H = run.cfg.n_heads;
    it->run.M = rn_config_slots(&run.cfg);
    it->run.K = run.cfg.top_k;
    it->run.n_tokens = run.n_tokens;
    it->run.slot_bits = tr_slot_bits(it->run.M);
    it->run.weight_fmt = run.weight_format;
    memcpy(it->cape_mask, run.cfg.cape_mask, sizeof it->cape_mask);
    it->run.cape_mask = it->cape_mask;
    it->lo = f->pos_lo > 0 ? f->pos_lo : 0;
    it->hi = f->pos_hi >= 0 ? f->pos_hi : INT64_MAX;
    it->op_only = (f->ops & RN_OPS_BOTH) == RN_OPS_BOTH ? -1
                : rn_ops_has(f->ops, RN_OP_READ) ? RN_OP_READ : RN_OP_WRITE;
    char where[512], sql[1200];
    where_clause(run_id, f, where, sizeof where);
    snprintf(sql, sizeof sql, "SELECT layer, head, pos0, npos, ops, cape_m, n, slots, weights"
             " FROM event_blocks%s ORDER BY layer, head, pos0", where);
    it->db = d;
    if ((rc = prep(d, sql, &it->st, err))) { free(it); return rc; }
    *out = it;
    return RN_OK;
}

/* One-line error for the current block. */
static int corrupt(const tr_iter *it, const char *why, rn_error *err)
{
    return rn_seterr(err, RN_EINPUT, "%s: corrupt trace: run %lld has an event block (layer %lld, head %lld, "
                     "pos %lld) with %s", it->db->path, (long long)it->run_id, (long long)it->layer,
                     (long long)it->head, (long long)it->pos0, why);
}

/* Read the current row's block header, checking it against the run's
 * header and the previous block. */
static int read_block(tr_iter *it, rn_error *err)
{
    sqlite3_stmt *st = it->st;
    static const char *const names[] = { "layer", "head", "pos0", "npos", "ops", "cape_m", "n" };
    it->layer = it->head = it->pos0 = 0;
    for (int c = 0; c < 7; c++)
        if (sqlite3_column_type(st, c) != SQLITE_INTEGER)
            return rn_seterr(err, RN_EINPUT, "%s: corrupt trace: run %lld has an event block whose %s is not an integer",
                             it->db->path, (long long)it->run_id, names[c]);
    it->layer = sqlite3_column_int64(st, 0);
    it->head = sqlite3_column_int64(st, 1);
    tr_block_hdr h;
    it->pos0 = h.pos0 = sqlite3_column_int64(st, 2);
    h.npos = sqlite3_column_int64(st, 3);
    h.ops = sqlite3_column_int64(st, 4);
    h.cape_m = sqlite3_column_int64(st, 5);
    h.n = sqlite3_column_int64(st, 6);
    it->slots = sqlite3_column_blob(st, 7);
    h.slots_len = sqlite3_column_type(st, 7) == SQLITE_BLOB ? sqlite3_column_bytes(st, 7) : -1;
    it->weights = sqlite3_column_blob(st, 8);
    h.weights_len = sqlite3_column_type(st, 8) == SQLITE_BLOB ? sqlite3_column_bytes(st, 8) : -1;
    char why[160];
    if (tr_block_check(&h, it->layer, it->head, &it->run, why, sizeof why)) return corrupt(it, why, err);
    if (it->have_prev && it->layer == it->prev_layer && it->head == it->prev_head && h.pos0 < it->prev_end)
        return rn_seterr(err, RN_EINPUT, "%s: corrupt trace: run %lld has position %lld of (layer %lld, head %lld) "
                         "twice (a duplicated event block)", it->db->path, (long long)it->run_id,
                         (long long)h.pos0, (long long)it->layer, (long long)it->head);
    it->have_prev = 1;
    it->prev_layer = it->layer;
    it->prev_head = it->head;
    it->prev_end = h.pos0 + h.npos;
    it->npos = h.npos;
    it->ops = h.ops;
    it->cape_m = h.cape_m;
    it->nops = tr_block_nops(h.ops);
    it->n_ent = h.n;
    int64_t first = it->lo > h.pos0 ? it->lo - h.pos0 : 0;
    it->e = first * it->nops * it->run.K;
    return RN_OK;
}

/* Step to the next block whose entries remain: 1, 0 at the end, or an
 * error code. */
static int next_block(tr_iter *it, rn_error *err)
{
    it->have_row = 0;
    if (it->done) return 0;
    int src = sqlite3_step(it->st);
    if (src == SQLITE_DONE) { it->done = 1; return 0; }
    if (src != SQLITE_ROW) return tr_sqlerr(it->db->db, src, it->db->path, "reading events", err);
    int rc = read_block(it, err);
    if (rc) return rc;
    it->have_row = 1;
    return 1;
}

/* RN_EINPUT for a stored slot outside the run's slots or a weight outside
 * [0, 1] (NaN too); RN_OK otherwise. */
static int check_entry(const tr_iter *it, uint32_t slot, float w, rn_error *err)
{
    char why[96];
    if ((int64_t)slot >= it->run.M) {
        snprintf(why, sizeof why, "slot %u outside [0, %lld]", slot, (long long)it->run.M - 1);
        return corrupt(it, why, err);
    }
    if (!(w >= 0 && w <= 1)) {   /* also NaN */
        snprintf(why, sizeof why, "weight %g not in [0, 1]", w);
        return corrupt(it, why, err);
    }
    return RN_OK;
}

/* Step to the next selected entry: it->e at an entry of a position below
 * the filter's end and of an op it keeps, *pos and *op that entry's; 1, 0
 * at the end, or an error code. */
static int next_entry(tr_iter *it, int64_t *pos, int *op, rn_error *err)
{
    for (;;) {
        if (!it->have_row || it->e >= it->n_ent) {
            int rc = next_block(it, err);
            if (rc != 1) return rc;
            continue;
        }
        int64_t K = it->run.K, per = it->nops * K, i = it->e;
        *pos = it->pos0 + i / per;
        if (*pos >= it->hi) { it->e = it->n_ent; continue; }
        *op = it->nops == 2 ? (int)(i % per / K) : (it->ops & 1 ? RN_OP_WRITE : RN_OP_READ);
        if (it->op_only >= 0 && *op != it->op_only) { it->e += K - i % K; continue; } /* the rest of the group */
        return 1;
    }
}

int tr_iter_next(tr_iter *it, tr_event *ev, rn_error *err)
{
    int64_t pos;
    int op;
    int rc = next_entry(it, &pos, &op, err);
    if (rc != 1) return rc;
    int64_t i = it->e++;
    uint32_t slot = tr_block_slot(it->slots, (size_t)i, it->run.slot_bits);
    float w = tr_block_weight(it->weights, (size_t)i, it->run.weight_fmt);
    if ((rc = check_entry(it, slot, w, err))) return rc;
    ev->layer = (uint16_t)it->layer;
    ev->head = (uint16_t)it->head;
    ev->pos = (int32_t)pos;
    ev->op = (uint8_t)op;
    ev->rank = (uint16_t)(i % it->run.K);
    ev->slot = slot;
    /* slot < M <= 2^32 and pos < 2^31: the sum fits in int64 */
    ev->addr = it->cape_m > 0 ? (uint32_t)(((int64_t)slot + pos) % it->cape_m) : slot;
    ev->weight = w;
    return 1;
}

int tr_iter_read(tr_iter *it, const tr_columns *c, size_t cap, size_t *n, rn_error *err)
{
    size_t got = 0;
    *n = 0;
    while (got < cap) {
        /* the entries of one op of one position: K in a row, i .. i + m */
        int64_t pos;
        int op;
        int rc = next_entry(it, &pos, &op, err);
        if (rc == 0) break;
        if (rc != 1) return rc;
        int64_t K = it->run.K, i = it->e, r0 = i % K;
        size_t m = (size_t)(K - r0) < cap - got ? (size_t)(K - r0) : cap - got;
        int bits = it->run.slot_bits, fmt = it->run.weight_fmt;
        for (size_t j = 0; j < m; j++) {
            size_t e = (size_t)i + j, o = got + j;
            uint32_t slot = tr_block_slot(it->slots, e, bits);
            float w = tr_block_weight(it->weights, e, fmt);
            if ((int64_t)slot >= it->run.M || !(w >= 0 && w <= 1)) {
                it->e = (int64_t)e;
                return check_entry(it, slot, w, err);
            }
            if (c->slot) c->slot[o] = slot;
            if (c->addr) c->addr[o] = it->cape_m > 0 ? (uint32_t)(((int64_t)slot + pos) % it->cape_m) : slot;
            if (c->weight) c->weight[o] = w;
            if (c->rank) c->rank[o] = (int32_t)(r0 + (int64_t)j);
        }
        for (size_t j = 0; j < m; j++) {
            size_t o = got + j;
            if (c->layer) c->layer[o] = (int32_t)it->layer;
            if (c->head) c->head[o] = (int32_t)it->head;
            if (c->pos) c->pos[o] = (int32_t)pos;
            if (c->op) c->op[o] = op;
        }
        it->e += (int64_t)m;
        got += m;
    }
    *n = got;
    return RN_OK;
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
