/* tracegen.c — the trace the trace fuzz targets start from, and the edit
 * script that breaks a copy of it (tracegen.h).  Shared by fuzz_trace.c
 * (the C readers and the analyses) and fuzz_vtab.c (the `events` virtual
 * table). */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "rn_config.h"
#include "tracegen.h"
#include "tr_writer.h"

#define MAX_EDITS 64

static uint8_t *g_base;     /* the pristine trace file */
static size_t g_base_len;

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
void tracegen_init(void)
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
    for (int p = 0; p < TRACEGEN_NPOS; p++) {
        char piece[2] = { (char)('a' + p % 26), 0 };
        tr_writer_add_token(w, p, 'a' + p % 26, piece, p >= TRACEGEN_NPOS / 2);
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
void tracegen_build(const char *path, fuzz_in *in)
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

