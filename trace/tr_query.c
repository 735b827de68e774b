/* tr_query.c — read-only SQL over a trace, printed by the row writer.
 *
 * The connection is opened SQLITE_OPEN_READONLY and each statement is also
 * checked with sqlite3_stmt_readonly before it runs, so a modifying statement
 * fails with one clear message and nothing is written.  Each result goes
 * through rn_rows (core/rn_rows.h): reals in the shortest form that reads
 * back exactly (9 digits for float weights), NULL as an empty cell (null in
 * JSON), blobs as x'..' text.
 *
 * Read connections also poll the process's stop flag (tr_set_stop_flag)
 * from an SQLite progress handler, so a runaway query ends on Ctrl-C.
 */
#include <stdlib.h>
#include <string.h>

#include "rn_rows.h"
#include "tr_query.h"
#include "tr_schema.h"

static volatile int *stop_flag;

void tr_set_stop_flag(volatile int *stop) { stop_flag = stop; }

/* SQLite progress handler: a non-zero return interrupts the statement
 * (SQLITE_INTERRUPT, mapped to RN_EINTR by tr_sqlerr). */
static int stop_requested(void *unused)
{
    (void)unused;
    return stop_flag && *stop_flag;
}

void tr_watch_stop(sqlite3 *db)
{
    /* Every 1000 VM instructions: well under a millisecond apart, and the
     * call is too rare to measure against the work it interleaves. */
    sqlite3_progress_handler(db, 1000, stop_requested, NULL);
}

/* Column i of the current row as a cell (blobs as x'..' text in buf). */
static rn_cell cell_of(sqlite3_stmt *st, int i, char *buf, size_t cap)
{
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_NULL: return rn_cell_null(NULL);
    case SQLITE_INTEGER: return rn_cell_int((int64_t)sqlite3_column_int64(st, i));
    case SQLITE_FLOAT: return rn_cell_real(sqlite3_column_double(st, i), NULL);
    case SQLITE_BLOB: {
        const unsigned char *b = sqlite3_column_blob(st, i);
        int n = sqlite3_column_bytes(st, i);
        size_t k = (size_t)snprintf(buf, cap, "x'");
        for (int j = 0; j < n && k + 4 < cap; j++) k += snprintf(buf + k, cap - k, "%02x", b[j]);
        snprintf(buf + k, cap - k, "'");
        return rn_cell_text(buf);
    }
    default: return rn_cell_text((const char *)sqlite3_column_text(st, i));
    }
}

/* Step st to the end, printing its rows through the row writer (a blank
 * line before every result but the first in table and CSV). */
static int print_result(sqlite3 *db, const char *path, sqlite3_stmt *st, int format, FILE *out,
                        int first_result, rn_error *err)
{
    int ncol = sqlite3_column_count(st), src;
    size_t n = (size_t)(ncol ? ncol : 1);
    const char **names = malloc(n * sizeof *names);
    rn_cell *cells = malloc(n * sizeof *cells);
    char (*bufs)[4096] = malloc(n * sizeof *bufs);
    if (!names || !cells || !bufs) {
        free(names); free(cells); free(bufs);
        return rn_seterr(err, RN_ENOMEM, "out of memory");
    }
    for (int c = 0; c < ncol; c++) names[c] = sqlite3_column_name(st, c);
    /* The first step runs before anything is printed: a query that fails
     * or is interrupted before its first row leaves no header behind. */
    src = sqlite3_step(st);
    if (src != SQLITE_ROW && src != SQLITE_DONE) {
        free(names); free(cells); free(bufs);
        return tr_sqlerr(db, src, path, "query failed", err);
    }
    if (!first_result && format != RN_FMT_JSON) fputc('\n', out);
    rn_rows w;
    int rc = rn_rows_begin(&w, out, format, ncol, names, NULL, err);
    if (rc) { free(names); free(cells); free(bufs); return rc; }
    for (; src == SQLITE_ROW; src = sqlite3_step(st)) {
        for (int c = 0; c < ncol; c++) cells[c] = cell_of(st, c, bufs[c], sizeof bufs[c]);
        if (rn_rows_add(&w, cells)) break;
    }
    rc = rn_rows_end(&w, err);
    free(names); free(cells); free(bufs);
    if (rc) return rc;
    if (src != SQLITE_DONE) return tr_sqlerr(db, src, path, "query failed", err);
    return RN_OK;
}

/* Run all statements of sql on an open read-only trace connection. */
static int run_sql(sqlite3 *db, const char *path, const char *sql, int format, FILE *out,
                   rn_error *err)
{
    const char *tail = sql;
    int results = 0;
    while (tail && *tail) {
        sqlite3_stmt *st = NULL;
        const char *next = NULL;
        int src = sqlite3_prepare_v2(db, tail, -1, &st, &next);
        if (src != SQLITE_OK) {
            int rc = rn_seterr(err, RN_EINPUT, "%s: SQL error: %s", path, sqlite3_errmsg(db));
            sqlite3_finalize(st);
            return rc;
        }
        tail = next;
        if (!st) continue;   /* whitespace or a comment */
        if (!sqlite3_stmt_readonly(st)) {
            sqlite3_finalize(st);
            return rn_seterr(err, RN_EINPUT,
                             "%s: the sql command is read-only; refusing a statement that "
                             "would modify the database", path);
        }
        int rc = print_result(db, path, st, format, out, results == 0, err);
        if (sqlite3_column_count(st)) results++;
        sqlite3_finalize(st);
        if (rc) {
            if (err && strstr(err->msg, "readonly")) /* belt and braces */
                err->code = RN_EINPUT;
            else if (err && err->code == RN_EINTERNAL) err->code = RN_EINPUT;
            return err ? err->code : RN_EINPUT;
        }
    }
    return RN_OK;
}

int tr_query_print(const char *path, const char *sql, int format, FILE *out, rn_error *err)
{
    sqlite3 *db;
    int rc = tr_schema_open_read(path, &db, err);
    if (rc) return rc;
    rc = run_sql(db, path, sql, format, out, err);
    sqlite3_close(db);
    return rc;
}

int tr_runs_print(const char *path, int format, FILE *out, rn_error *err)
{
    static const char sql[] =
        "SELECT run_id AS id, name, status, command,"
        " CASE WHEN status = 'running' THEN (SELECT count(*) FROM tokens t"
        "   WHERE t.run_id = r.run_id) ELSE n_tokens END AS tokens,"
        " CASE WHEN status = 'running' THEN (SELECT coalesce(sum(n), 0) FROM event_groups g"
        "   WHERE g.run_id = r.run_id) ELSE n_events END AS events,"
        " model_hash AS model, datetime(start_time, 'unixepoch') AS started_utc,"
        " round(coalesce(end_time, start_time) - start_time, 2) AS seconds,"
        " selection, model_path"
        " FROM runs AS r ORDER BY run_id";
    return tr_query_print(path, sql, format, out, err);
}
