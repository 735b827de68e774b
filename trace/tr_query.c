/* tr_query.c — read-only SQL over a trace, printed by the row writer.
 *
 * The connection is opened SQLITE_OPEN_READONLY and each statement is also
 * checked with sqlite3_stmt_readonly before it runs, so a modifying statement
 * fails with one clear message and nothing is written.  Each result goes
 * through rn_rows (core/base/rn_rows.h): reals in the shortest form that reads
 * back exactly (9 digits for float weights), NULL as an empty cell (null in
 * JSON), blobs as x'..' text.
 *
 * `ramtrace sql --run N` scopes the SQL to one run with TEMP views named
 * like the main tables and views (events, reads, writes, tokens, heads,
 * event_blocks) plus runs_this, each `SELECT * FROM main.X WHERE run_id = N`.
 * An unqualified name in a statement resolves to the temp schema first, so
 * user SQL sees the scoped view; the main schema's own views (reads, writes
 * over the events virtual table) resolve their names inside main, so they
 * are untouched by the shadows and each temp view is filtered on its own.
 * The temp schema lives in memory: the file is still opened read-only and
 * never written.
 *
 * Read connections also poll the process's stop flag (tr_stop.h), so a
 * runaway query ends on Ctrl-C.  tr_query_json_run (the viewer's SQL box)
 * also bounds a query's time, with the same progress handler, and its
 * rows per result.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rn_rows.h"
#include "tr_query.h"
#include "tr_schema.h"

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

/* How run_sql prints: wrap puts the results in one JSON array of
 * {"columns", "rows"} objects (tr_query_json_run); max_rows > 0 caps each
 * result's rows, setting *truncated when rows were left unread. */
typedef struct {
    int wrap;
    int64_t max_rows;
    int *truncated;
} query_shape;

/* Step st to the end, printing its rows through the row writer (a blank
 * line before every result but the first in table and CSV). */
static int print_result(sqlite3 *db, const char *path, sqlite3_stmt *st, int format, FILE *out,
                        int first_result, const query_shape *q, rn_error *err)
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
    rn_rows_opts ro = { .json_embed = q->wrap };
    if (q->wrap) {
        fputs(first_result ? "{\"columns\": [" : ",\n{\"columns\": [", out);
        for (int c = 0; c < ncol; c++) {
            if (c) fputs(", ", out);
            rn_json_string(out, names[c]);
        }
        fputs("], \"rows\": ", out);
    }
    rn_rows w;
    int rc = rn_rows_begin(&w, out, format, ncol, names, &ro, err);
    if (rc) { free(names); free(cells); free(bufs); return rc; }
    for (int64_t rows = 0; src == SQLITE_ROW; src = sqlite3_step(st)) {
        if (q->max_rows > 0 && rows++ == q->max_rows) {
            if (q->truncated) *q->truncated = 1;
            src = SQLITE_DONE;
            break;
        }
        for (int c = 0; c < ncol; c++) cells[c] = cell_of(st, c, bufs[c], sizeof bufs[c]);
        if (rn_rows_add(&w, cells)) break;
    }
    rc = rn_rows_end(&w, err);
    if (q->wrap) fputc('}', out);
    free(names); free(cells); free(bufs);
    if (rc) return rc;
    if (src != SQLITE_DONE) return tr_sqlerr(db, src, path, "query failed", err);
    return RN_OK;
}

/* Run all statements of sql on an open read-only trace connection. */
static int run_sql(sqlite3 *db, const char *path, const char *sql, int format, FILE *out,
                   const query_shape *q, rn_error *err)
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
        int rc = print_result(db, path, st, format, out, results == 0, q, err);
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


/* The run that TR_RUN_LATEST or an explicit id names, checked to exist.
 * *found is 0 when the file has no runs at all (only for TR_RUN_LATEST). */
static int resolve_run(sqlite3 *db, const char *path, int64_t run, int64_t *id, int *found,
                       rn_error *err)
{
    sqlite3_stmt *st;
    const char *sql = run == TR_RUN_LATEST ? "SELECT max(run_id) FROM runs"
                                           : "SELECT run_id FROM runs WHERE run_id = ?1";
    int src = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (src != SQLITE_OK) return tr_sqlerr(db, src, path, "reading the runs", err);
    sqlite3_bind_int64(st, 1, run);
    src = sqlite3_step(st);
    *found = src == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL;
    *id = *found ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    if (src != SQLITE_ROW && src != SQLITE_DONE) return tr_sqlerr(db, src, path, "reading the runs", err);
    if (!*found && run != TR_RUN_LATEST)
        return rn_seterr(err, RN_EINPUT, "%s: no run %lld (see `ramtrace runs %s`)", path,
                         (long long)run, path);
    return RN_OK;
}

/* Create the TEMP views that scope every per-run name to run id (with
 * found == 0, to no run: the views are empty). */
static int scope_to_run(sqlite3 *db, const char *path, int64_t id, int found, rn_error *err)
{
    static const char *const names[] = { "events", "reads", "writes", "tokens", "heads",
                                         "event_blocks" };
    char sql[1024], cond[64];
    if (found) snprintf(cond, sizeof cond, "run_id = %lld", (long long)id);
    else snprintf(cond, sizeof cond, "0");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(sql, sizeof sql, "CREATE TEMP VIEW %s AS SELECT * FROM main.%s WHERE %s",
                 names[i], names[i], cond);
        int rc = tr_exec_what(db, path, sql, "scoping the SQL to one run", err);
        if (rc) return rc;
    }
    snprintf(sql, sizeof sql, "CREATE TEMP VIEW runs_this AS SELECT * FROM main.runs WHERE %s",
             found ? cond : "0");
    return tr_exec_what(db, path, sql, "scoping the SQL to one run", err);
}

struct query_deadline;

/* Open path read-only, scope it to run and run sql (tr_query_print_run,
 * tr_query_json_run); a non-NULL deadline bounds the time. */
static int query_run(const char *path, const char *sql, int64_t run, int format, FILE *out,
                     const query_shape *q, struct query_deadline *deadline, rn_error *err);

int tr_query_print_run(const char *path, const char *sql, int64_t run, int format, FILE *out,
                       rn_error *err)
{
    query_shape q = { 0, 0, NULL };
    return query_run(path, sql, run, format, out, &q, NULL, err);
}

/* A query's time limit: the progress handler ends the statement once the
 * monotonic clock passes `at` (or the stop flag is raised). */
struct query_deadline {
    double at, seconds;
    int expired;
};

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int past_deadline(void *user)
{
    struct query_deadline *d = user;
    if (tr_stop_requested()) return 1;
    if (mono_now() > d->at) { d->expired = 1; return 1; }
    return 0;
}

int tr_query_json_run(const char *path, const char *sql, int64_t run, const tr_query_limits *lim, FILE *out,
                      int *truncated, rn_error *err)
{
    if (truncated) *truncated = 0;
    if (!(lim->seconds > 0) || lim->max_rows < 1)
        return rn_seterr(err, RN_EINPUT, "query limits: seconds must be > 0 and max_rows >= 1");
    query_shape q = { 1, lim->max_rows, truncated };
    struct query_deadline d = { mono_now() + lim->seconds, lim->seconds, 0 };
    fputc('[', out);
    int rc = query_run(path, sql, run, RN_FMT_JSON, out, &q, &d, err);
    fputs("]\n", out);
    if (rc && d.expired)
        rc = rn_seterr(err, RN_EINPUT, "%s: query ran past the %g s limit", path, lim->seconds);
    return rc;
}

static int query_run(const char *path, const char *sql, int64_t run, int format, FILE *out,
                     const query_shape *q, struct query_deadline *deadline, rn_error *err)
{
    if (run < TR_RUN_ALL)
        return rn_seterr(err, RN_EINPUT, "%s: run id %lld is not valid", path, (long long)run);
    sqlite3 *db;
    int rc = tr_schema_open_read(path, &db, err);
    if (rc) return rc;
    if (deadline) sqlite3_progress_handler(db, 1000, past_deadline, deadline); /* replaces tr_watch_stop's */
    if (run != TR_RUN_ALL) {
        int64_t id = 0;
        int found = 0;
        rc = resolve_run(db, path, run, &id, &found, err);
        if (!rc) rc = scope_to_run(db, path, id, found, err);
    }
    if (!rc) rc = run_sql(db, path, sql, format, out, q, err);
    tr_schema_close_read(db, path);
    return rc;
}

int tr_query_print(const char *path, const char *sql, int format, FILE *out, rn_error *err)
{
    return tr_query_print_run(path, sql, TR_RUN_ALL, format, out, err);
}

int tr_runs_print(const char *path, int format, FILE *out, rn_error *err)
{
    static const char sql[] =
        "SELECT run_id AS id, name, status, command,"
        " CASE WHEN status = 'running' THEN (SELECT count(*) FROM tokens t"
        "   WHERE t.run_id = r.run_id) ELSE n_tokens END AS tokens,"
        " CASE WHEN status = 'running' THEN (SELECT coalesce(sum(n), 0) FROM event_blocks g"
        "   WHERE g.run_id = r.run_id) ELSE n_events END AS events,"
        " model_hash AS model, datetime(start_time, 'unixepoch') AS started_utc,"
        " round(coalesce(end_time, start_time) - start_time, 2) AS seconds,"
        " selection, model_path"
        " FROM runs AS r ORDER BY run_id";
    return tr_query_print(path, sql, format, out, err);
}
