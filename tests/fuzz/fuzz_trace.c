/* fuzz_trace.c — fuzz target: trace databases.
 *
 * A real small trace is written once per process with the trace writer
 * (2 layers x 2 heads, M = 16, K = 3, 20 positions, CAPE on two heads).
 * Each input is a script of structured edits applied to a fresh copy:
 * SQL-level (a value set to an out-of-range or mistyped value, rows
 * deleted or duplicated, columns swapped, the run's config text spliced,
 * a block's BLOBs cut or zeroed, the schema changed, the run copied as a
 * second run) and
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
#include "tr_writer.h"

#define NPOS 20
#define MAX_EDITS 64

static uint8_t *g_base;     /* the pristine trace file */
static size_t g_base_len;
static FILE *g_null;

enum { T_RUNS, T_TOKENS, T_HEADS, T_BLOCKS, N_TABLES };
static const char *const table_name[N_TABLES] = { "runs", "tokens", "heads", "event_blocks" };
static const char *const runs_cols[] = {
    "run_id", "name", "command", "status", "model_path", "model_hash", "config", "prompt", "input_path",
    "sampling", "selection", "start_time", "end_time", "tool_version", "n_layers", "n_heads", "n_slots",
    "top_k", "n_tokens", "n_events", "weight_format" };
static const char *const tokens_cols[] = { "run_id", "pos", "token_id", "piece", "phase" };
static const char *const heads_cols[] = { "run_id", "layer", "head", "cape", "n_slots" };
static const char *const blocks_cols[] = {
    "run_id", "layer", "head", "pos0", "npos", "ops", "cape_m", "n", "slots", "weights" };
static const char *const *const table_cols[N_TABLES] = { runs_cols, tokens_cols, heads_cols, blocks_cols };
static const int table_ncols[N_TABLES] = { 21, 5, 5, 10 };
static int64_t table_rows[N_TABLES]; /* rows of each table in the pristine trace */

/* Write the pristine trace with the trace writer and keep its bytes. */
static void make_base(void)
{
    char path[512];
    fuzz_path(path, sizeof path, "base.db");
    rn_config c;
    rn_config_default(&c);
    c.n_layers = 2; c.n_heads = 2; c.d_p = 4; c.order = 2; c.top_k = 3; c.d_v = 8;
    memset(c.cape_mask, 0, sizeof c.cape_mask);
    c.cape_mask[0] = 1;
    c.cape_mask[1] = 2;
    rn_error err = { 0 };
    fuzz_check(rn_config_validate(&c, &err) == RN_OK, "base config: %s", err.msg);
    tr_select sel;
    tr_select_all(&sel);
    tr_run_meta meta = { .name = "fuzz", .command = "trace", .cfg = &c, .prompt = "fuzz" };
    tr_writer *w;
    fuzz_check(tr_writer_open(path, &meta, &sel, NULL, &w, &err) == RN_OK, "writer: %s", err.msg);
    const rn_probe *pr = tr_writer_probe(w);
    for (int p = 0; p < NPOS; p++) {
        char piece[2] = { (char)('a' + p % 26), 0 };
        tr_writer_add_token(w, p, 'a' + p % 26, piece, p >= NPOS / 2);
        for (int l = 0; l < 2; l++)
            for (int h = 0; h < 2; h++)
                for (int op = 0; op < 2; op++) {
                    uint32_t a[3], s[3];
                    float wt[3] = { 0.6f, 0.25f, 0.1f };
                    a[0] = (uint32_t)(p * 7 + l + 3 * h + op) % 16;
                    a[1] = (a[0] + 1 + (uint32_t)p % 5) % 16;
                    a[2] = (a[1] + 1 + (uint32_t)(p + l) % 3) % 16;
                    if (a[2] == a[0]) a[2] = (a[2] + 1) % 16;
                    int cape = (int)((c.cape_mask[l] >> h) & 1);
                    for (int k = 0; k < 3; k++) s[k] = cape ? (a[k] + 16 - (uint32_t)p % 16) % 16 : a[k];
                    pr->access(pr->user, l, h, p, op, 3, s, a, wt);
                }
    }
    fuzz_check(tr_writer_finish(w, TR_STATUS_COMPLETE, NULL, &err) == RN_OK, "writer: %s", err.msg);
    FILE *f = fopen(path, "rb");
    fuzz_check(f != NULL, "cannot read %s", path);
    fseek(f, 0, SEEK_END);
    g_base_len = (size_t)ftell(f);
    rewind(f);
    g_base = malloc(g_base_len);
    fuzz_check(g_base && fread(g_base, 1, g_base_len, f) == g_base_len, "%s", "reading the base trace");
    fclose(f);
    sqlite3 *db;
    fuzz_check(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK, "%s", "reopening");
    for (int t = 0; t < N_TABLES; t++) {
        char sql[128];
        sqlite3_stmt *st;
        snprintf(sql, sizeof sql, "SELECT max(rowid) FROM %s", table_name[t]);
        fuzz_check(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW,
                   "%s", sqlite3_errmsg(db));
        table_rows[t] = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    unlink(path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    g_null = fopen("/dev/null", "w");
    make_base();
    return 0;
}

/* Bind a value chosen by the input to parameter i of st. */
static void bind_value(sqlite3_stmt *st, int i, fuzz_in *in)
{
    uint8_t kind = fuzz_u8(in);
    switch (kind % 13) {
    case 0: sqlite3_bind_int64(st, i, (int8_t)fuzz_u8(in)); break;
    case 1: sqlite3_bind_int64(st, i, (int32_t)fuzz_u32(in)); break;
    case 2: sqlite3_bind_int64(st, i, INT32_MAX); break;
    case 3: sqlite3_bind_int64(st, i, INT32_MIN); break;
    case 4: sqlite3_bind_int64(st, i, (int64_t)UINT32_MAX + 1 + fuzz_u8(in)); break;
    case 5: sqlite3_bind_int64(st, i, fuzz_u8(in) & 1 ? INT64_MAX : INT64_MIN); break;
    case 6: sqlite3_bind_null(st, i); break;
    case 7: {
        char txt[9];
        int n = fuzz_u8(in) % 9;
        for (int k = 0; k < n; k++) txt[k] = (char)fuzz_u8(in);
        sqlite3_bind_text(st, i, txt, n, SQLITE_TRANSIENT);
        break;
    }
    case 8: {
        uint32_t u = fuzz_u32(in);
        float f;
        memcpy(&f, &u, 4);
        sqlite3_bind_double(st, i, f);
        break;
    }
    case 9: sqlite3_bind_double(st, i, (double)(int8_t)fuzz_u8(in) / 8.0); break;
    case 10: sqlite3_bind_double(st, i, fuzz_u8(in) & 1 ? 1e300 : -0.0); break;
    case 11: {
        uint8_t b[8];
        int n = fuzz_u8(in) % 9;
        for (int k = 0; k < n; k++) b[k] = fuzz_u8(in);
        sqlite3_bind_blob(st, i, b, n, SQLITE_TRANSIENT);
        break;
    }
    default: sqlite3_bind_int64(st, i, 1 + fuzz_u8(in) % 24); break;
    }
}

/* Run one SQL statement with an optional value (from the input) bound as
 * ?1 and a row id as ?2; failures (constraints, a dropped table) are part
 * of fuzzing and ignored. */
static void run_sql(sqlite3 *db, const char *sql, fuzz_in *value, int64_t rowid)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return;
    int np = sqlite3_bind_parameter_count(st);
    if (np >= 1 && value) bind_value(st, 1, value);
    if (np >= 2) sqlite3_bind_int64(st, 2, rowid);
    while (sqlite3_step(st) == SQLITE_ROW) {}
    sqlite3_finalize(st);
}

/* "WHERE rowid = ?2" for one row, "" (every row) when the selector is 255. */
static const char *rows(uint8_t sel, int table, int64_t *rowid)
{
    *rowid = 1 + (int64_t)(sel % (table_rows[table] > 0 ? table_rows[table] : 1));
    return sel == 255 ? "" : " WHERE rowid = ?2";
}

/* Copy run 1 (its row, heads, tokens and events) as run 2 with some
 * values shifted, so readers see a second, latest run. */
static void copy_run(sqlite3 *db, fuzz_in *in)
{
    char sql[2048];
    static const int tabs[4] = { T_RUNS, T_TOKENS, T_HEADS, T_BLOCKS };
    int shift_col = fuzz_u8(in);
    for (int t = 0; t < 4; t++) {
        int tab = tabs[t];
        size_t len = (size_t)snprintf(sql, sizeof sql, "INSERT INTO %s SELECT ", table_name[tab]);
        for (int c = 0; c < table_ncols[tab]; c++) {
            const char *col = table_cols[tab][c];
            if (c == 0) len += (size_t)snprintf(sql + len, sizeof sql - len, "2");
            else if (c == shift_col % table_ncols[tab] && tab != T_RUNS)
                len += (size_t)snprintf(sql + len, sizeof sql - len, ", %s + 1", col);
            else len += (size_t)snprintf(sql + len, sizeof sql - len, ", %s", col);
        }
        snprintf(sql + len, sizeof sql - len, " FROM %s WHERE run_id = 1", table_name[tab]);
        run_sql(db, sql, NULL, 0);
    }
}

/* One SQL-level edit decided by the input; dups counts whole-table
 * duplications (capped so a short input cannot grow the file 2^n-fold). */
static void sql_edit(sqlite3 *db, uint8_t op, fuzz_in *in, int *dups)
{
    char sql[512];
    int64_t rowid;
    int t = fuzz_u8(in) % N_TABLES;
    const char *const *cols = table_cols[t];
    int nc = table_ncols[t];
    switch (op) {
    case 0: { /* set a value */
        const char *col = cols[fuzz_u8(in) % nc];
        const char *where = rows(fuzz_u8(in), t, &rowid);
        snprintf(sql, sizeof sql, "UPDATE %s SET %s = ?1%s", table_name[t], col, where);
        run_sql(db, sql, in, rowid);
        break;
    }
    case 1: { /* delete rows */
        const char *where = rows(fuzz_u8(in), t, &rowid);
        snprintf(sql, sizeof sql, "DELETE FROM %s%s", table_name[t], where);
        run_sql(db, sql, NULL, rowid);
        break;
    }
    case 2: { /* duplicate rows */
        uint8_t sel = fuzz_u8(in);
        if (sel == 255 && ++*dups > 2) break;
        const char *where = rows(sel, t, &rowid);
        snprintf(sql, sizeof sql, "INSERT INTO %s SELECT * FROM %s%s", table_name[t], table_name[t], where);
        run_sql(db, sql, NULL, rowid);
        break;
    }
    case 3: { /* swap two columns */
        const char *a = cols[fuzz_u8(in) % nc], *b = cols[fuzz_u8(in) % nc];
        const char *where = rows(fuzz_u8(in), t, &rowid);
        snprintf(sql, sizeof sql, "UPDATE %s SET %s = %s, %s = %s%s", table_name[t], a, b, b, a, where);
        run_sql(db, sql, NULL, rowid);
        break;
    }
    case 4: { /* splice bytes into the run's config text */
        int at = fuzz_u8(in) * 2, cut = fuzz_u8(in) % 8, n = fuzz_u8(in) % 17;
        char txt[17];
        for (int k = 0; k < n; k++) txt[k] = (char)fuzz_u8(in);
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(db, "UPDATE runs SET config = substr(config, 1, ?1) || ?2 || "
                               "substr(config, ?1 + ?3 + 1)", -1, &st, NULL) == SQLITE_OK) {
            sqlite3_bind_int(st, 1, at);
            sqlite3_bind_text(st, 2, txt, n, SQLITE_TRANSIENT);
            sqlite3_bind_int(st, 3, cut);
            sqlite3_step(st);
            sqlite3_finalize(st);
        }
        break;
    }
    case 5: { /* schema-level edits */
        static const char *const edits[] = {
            "UPDATE event_blocks SET slots = substr(slots, 1, ?1)", "UPDATE event_blocks SET weights = zeroblob(abs(?1 % 4096))",
            "UPDATE event_blocks SET slots = substr(slots, 2) || substr(slots, 1, 1)",
            "DROP INDEX IF EXISTS event_blocks_key", "UPDATE runs SET status = ?1",
            "PRAGMA user_version = 1", "DROP VIEW reads", "CREATE TABLE extra(a, b)",
            "UPDATE runs SET status = 'interrupted'", "ALTER TABLE event_blocks RENAME COLUMN weights TO w9",
            "DROP TABLE tokens", "UPDATE runs SET n_tokens = n_tokens + ?1" };
        run_sql(db, edits[fuzz_u8(in) % (sizeof edits / sizeof *edits)], in, 0);
        break;
    }
    default: copy_run(db, in); break;
    }
}

/* A byte-level edit, applied after SQLite has closed the file. */
typedef struct {
    int truncate;        /* 1: truncate to at; 0: overwrite len bytes at at */
    size_t at, len;
    uint8_t bytes[16];
} byte_edit;

static void apply_bytes(const char *path, const byte_edit *e, int n)
{
    for (int i = 0; i < n; i++) {
        FILE *f = fopen(path, "r+b");
        fuzz_check(f != NULL, "cannot reopen %s", path);
        fseek(f, 0, SEEK_END);
        size_t len = (size_t)ftell(f);
        if (e[i].truncate) {
            fuzz_check(ftruncate(fileno(f), (off_t)(len ? e[i].at % (len + 1) : 0)) == 0, "%s", "truncate");
        } else if (len) {
            size_t at = e[i].at % len, k = e[i].len < len - at ? e[i].len : len - at;
            fseek(f, (long)at, SEEK_SET);
            fuzz_check(fwrite(e[i].bytes, 1, k, f) == k, "%s", "overwrite");
        }
        fclose(f);
    }
}

/* Make path a fresh copy of the base trace edited as the input says. */
static void build_input(const char *path, fuzz_in *in)
{
    char side[600];
    static const char *const sfx[] = { "-journal", "-wal", "-shm" };
    for (int i = 0; i < 3; i++) {
        snprintf(side, sizeof side, "%s%s", path, sfx[i]);
        unlink(side);
    }
    fuzz_write_file(path, g_base, g_base_len);
    byte_edit be[MAX_EDITS];
    int nbe = 0, dups = 0, nedit = 0;
    sqlite3 *db;
    fuzz_check(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK, "%s", "opening the copy");
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    while (in->n && nedit++ < MAX_EDITS) {
        uint8_t op = fuzz_u8(in) % 9;
        if (op < 7) sql_edit(db, op, in, &dups);
        else {
            byte_edit *e = &be[nbe++];
            e->truncate = op == 7;
            uint16_t at = fuzz_u16(in);
            /* truncations are page-aligned when the top bit says so */
            e->at = e->truncate && (at & 0x8000) ? (size_t)(at & 0x7fff) % 64 * 4096 : at;
            e->len = 1 + fuzz_u8(in) % 16;
            for (size_t k = 0; !e->truncate && k < e->len; k++) e->bytes[k] = fuzz_u8(in);
        }
    }
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    fuzz_check(sqlite3_close(db) == SQLITE_OK, "%s", "closing the copy");
    apply_bytes(path, be, nbe);
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
    int rc = an_streams_build(ev, n, &r->run.cfg, AN_SCOPE_HEAD, RN_OPS_BOTH, &ss, &err);
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
    int rc = an_streams_build(ev, n, &r->run.cfg, AN_SCOPE_MODEL, RN_OPS_BOTH, &ss, &err);
    if (rc) { fuzz_check_error(rc, &err, BAD, "an_streams_build(model)"); return; }
    if (ss.n == 0) { an_streams_free(&ss); return; }
    uint64_t universe = ss.s[0].universe;
    uint64_t caps[3] = { 1, 3 < universe ? 3 : universe, an_streams_max_keys(&ss) ? an_streams_max_keys(&ss) : 1 };
    const an_policy *pol[32];
    int np = an_policy_count() < 32 ? an_policy_count() : 32;
    for (int i = 0; i < np; i++) pol[i] = an_policy_at(i);
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
    rc = an_spill_build(r, -1, -1, AN_SCOPE_MODEL, RN_OPS_BOTH, 0, NULL, &sp, &err);
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
    build_input(path, &in);
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
