/* tr_query.c — read-only SQL over a trace and the three output formats.
 *
 * The connection is opened SQLITE_OPEN_READONLY and each statement is also
 * checked with sqlite3_stmt_readonly before it runs, so a modifying statement
 * fails with one clear message and nothing is written.  Tables are aligned
 * over the first TABLE_SAMPLE rows (later rows are streamed with those
 * widths, so memory stays bounded for any result size).  Reals print in
 * the shortest form that reads back exactly (9 digits for float weights).
 */
#include <stdlib.h>
#include <string.h>

#include "tr_query.h"
#include "tr_schema.h"

#define TABLE_SAMPLE 1000

int tr_format_parse(const char *s)
{
    if (!strcmp(s, "table")) return TR_FMT_TABLE;
    if (!strcmp(s, "csv")) return TR_FMT_CSV;
    if (!strcmp(s, "json")) return TR_FMT_JSON;
    return -1;
}

/* Text of column i of the current row into buf (NULL -> "", reals in the
 * shortest form that reads back exactly, blobs as x'..'). */
static const char *cell_text(sqlite3_stmt *st, int i, char *buf, size_t cap)
{
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_NULL: buf[0] = 0; return buf;
    case SQLITE_INTEGER:
        snprintf(buf, cap, "%lld", (long long)sqlite3_column_int64(st, i));
        return buf;
    case SQLITE_FLOAT: {
        /* Shortest text that reads back exactly; a value that is exactly a
         * float (trace weights) reads back from 9 digits as that float. */
        double v = sqlite3_column_double(st, i);
        snprintf(buf, cap, "%.15g", v);
        if (strtod(buf, NULL) != v) {
            if ((double)(float)v == v) snprintf(buf, cap, "%.9g", v);
            else snprintf(buf, cap, "%.17g", v);
        }
        return buf;
    }
    case SQLITE_BLOB: {
        const unsigned char *b = sqlite3_column_blob(st, i);
        int n = sqlite3_column_bytes(st, i);
        size_t k = (size_t)snprintf(buf, cap, "x'");
        for (int j = 0; j < n && k + 4 < cap; j++) k += snprintf(buf + k, cap - k, "%02x", b[j]);
        snprintf(buf + k, cap - k, "'");
        return buf;
    }
    default: {
        const char *t = (const char *)sqlite3_column_text(st, i);
        return t ? t : "";
    }
    }
}

static void put_csv(FILE *out, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) { fputs(s, out); return; }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"') fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

static void put_json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(out, "\\%c", *p);
        else if (*p == '\n') fputs("\\n", out);
        else if (*p == '\t') fputs("\\t", out);
        else if (*p < 0x20) fprintf(out, "\\u%04x", *p);
        else fputc(*p, out);
    }
    fputc('"', out);
}

/* UTF-8 display width (code points). */
static int disp_width(const char *s)
{
    int w = 0;
    for (; *s; s++) w += ((unsigned char)*s & 0xC0) != 0x80;
    return w;
}

static void put_padded(FILE *out, const char *s, int width, int right)
{
    int pad = width - disp_width(s);
    if (right) for (int i = 0; i < pad; i++) fputc(' ', out);
    fputs(s, out);
    if (!right) for (int i = 0; i < pad; i++) fputc(' ', out);
}

typedef struct {
    char **cells;   /* [rows * ncol] */
    int *numeric;   /* [rows * ncol] */
    int rows, cap;
} sample;

static void sample_free(sample *s, int ncol)
{
    for (int i = 0; i < s->rows * ncol; i++) free(s->cells[i]);
    free(s->cells);
    free(s->numeric);
}

static void table_row(FILE *out, char **cells, const int *numeric, const int *width, int ncol)
{
    for (int c = 0; c < ncol; c++) {
        if (c) fputs("  ", out);
        if (c == ncol - 1 && !numeric[c]) fputs(cells[c], out);
        else put_padded(out, cells[c], width[c], numeric[c]);
    }
    fputc('\n', out);
}

/* Step st to the end, printing its rows in format. */
static int print_result(sqlite3 *db, const char *path, sqlite3_stmt *st, int format, FILE *out,
                        int first_result, rn_error *err)
{
    int ncol = sqlite3_column_count(st), src;
    char buf[4096];
    if (format == TR_FMT_CSV) {
        if (!first_result) fputc('\n', out);
        for (int c = 0; c < ncol; c++) {
            if (c) fputc(',', out);
            put_csv(out, sqlite3_column_name(st, c));
        }
        if (ncol) fputc('\n', out);
        while ((src = sqlite3_step(st)) == SQLITE_ROW) {
            for (int c = 0; c < ncol; c++) {
                if (c) fputc(',', out);
                put_csv(out, cell_text(st, c, buf, sizeof buf));
            }
            fputc('\n', out);
        }
    } else if (format == TR_FMT_JSON) {
        fputc('[', out);
        int row = 0;
        while ((src = sqlite3_step(st)) == SQLITE_ROW) {
            fputs(row++ ? ",\n {" : "{", out);
            for (int c = 0; c < ncol; c++) {
                if (c) fputs(", ", out);
                put_json_string(out, sqlite3_column_name(st, c));
                fputs(": ", out);
                int t = sqlite3_column_type(st, c);
                const char *s = cell_text(st, c, buf, sizeof buf);
                if (t == SQLITE_NULL) fputs("null", out);
                else if (t == SQLITE_INTEGER) fputs(s, out);
                else if (t == SQLITE_FLOAT) {
                    double v = sqlite3_column_double(st, c);
                    if (v != v || v - v != 0) fputs("null", out); /* NaN / inf */
                    else fputs(s, out);
                } else put_json_string(out, s);
            }
            fputc('}', out);
        }
        fputs("]\n", out);
    } else {
        sample s = { 0 };
        int *width = calloc(ncol ? ncol : 1, sizeof(int));
        int *colnum = calloc(ncol ? ncol : 1, sizeof(int));
        if (!width || !colnum) { free(width); free(colnum); return rn_seterr(err, RN_ENOMEM, "out of memory"); }
        for (int c = 0; c < ncol; c++) width[c] = disp_width(sqlite3_column_name(st, c));
        int oom = 0;
        while (s.rows < TABLE_SAMPLE && (src = sqlite3_step(st)) == SQLITE_ROW) {
            if (s.rows == s.cap) {
                s.cap = s.cap ? 2 * s.cap : 64;
                char **nc = realloc(s.cells, sizeof(char *) * s.cap * ncol);
                if (nc) s.cells = nc;
                int *nn = realloc(s.numeric, sizeof(int) * s.cap * ncol);
                if (nn) s.numeric = nn;
                if (!nc || !nn) { oom = 1; break; }
            }
            for (int c = 0; c < ncol; c++) {
                int t = sqlite3_column_type(st, c);
                char *v = strdup(cell_text(st, c, buf, sizeof buf));
                if (!v) { oom = 1; v = NULL; }
                s.cells[s.rows * ncol + c] = v;
                s.numeric[s.rows * ncol + c] = t == SQLITE_INTEGER || t == SQLITE_FLOAT;
                if (v && disp_width(v) > width[c]) width[c] = disp_width(v);
            }
            s.rows++;
            if (oom) break;
        }
        if (oom) {
            sample_free(&s, ncol);
            free(width); free(colnum);
            return rn_seterr(err, RN_ENOMEM, "out of memory");
        }
        /* A column is right-aligned when all its sampled values are numbers. */
        for (int c = 0; c < ncol; c++) {
            colnum[c] = s.rows > 0;
            for (int r = 0; r < s.rows; r++)
                if (!s.numeric[r * ncol + c] && s.cells[r * ncol + c][0]) colnum[c] = 0;
        }
        if (!first_result) fputc('\n', out);
        if (ncol) {
            for (int c = 0; c < ncol; c++) {
                if (c) fputs("  ", out);
                if (c == ncol - 1 && !colnum[c]) fputs(sqlite3_column_name(st, c), out);
                else put_padded(out, sqlite3_column_name(st, c), width[c], colnum[c]);
            }
            fputc('\n', out);
            for (int c = 0; c < ncol; c++) {
                if (c) fputs("  ", out);
                for (int i = 0; i < width[c]; i++) fputc('-', out);
            }
            fputc('\n', out);
        }
        for (int r = 0; r < s.rows; r++) table_row(out, s.cells + r * ncol, colnum, width, ncol);
        sample_free(&s, ncol);
        if (s.rows == TABLE_SAMPLE) {
            char **cells = malloc(sizeof(char *) * (ncol ? ncol : 1));
            if (!cells) { free(width); free(colnum); return rn_seterr(err, RN_ENOMEM, "out of memory"); }
            /* Text cells point into the statement (valid until the next
             * step); numbers and blobs are formatted into bufs. */
            char (*bufs)[4096] = malloc(sizeof(*bufs) * (ncol ? ncol : 1));
            if (!bufs) {
                free(cells); free(width); free(colnum);
                return rn_seterr(err, RN_ENOMEM, "out of memory");
            }
            while ((src = sqlite3_step(st)) == SQLITE_ROW) {
                for (int c = 0; c < ncol; c++)
                    cells[c] = (char *)cell_text(st, c, bufs[c], sizeof bufs[c]);
                table_row(out, cells, colnum, width, ncol);
            }
            free(bufs);
            free(cells);
        }
        free(width);
        free(colnum);
    }
    if (src != SQLITE_DONE) return tr_sqlerr(db, src, path, "query failed", err);
    if (ferror(out)) return rn_seterr(err, RN_EIO, "writing the result failed");
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
