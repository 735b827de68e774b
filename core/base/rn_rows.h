/* rn_rows.h — the one output-format vocabulary (table, csv, json) and the
 * one row writer every command that prints rows uses.
 *
 * A result is a list of named columns and rows of typed cells.  The writer
 * turns them into
 *   table  columns aligned two spaces apart under a dashed rule: a column
 *          whose measured cells are all numbers is right-aligned, others
 *          left-aligned, the last column unpadded when it is text.  Widths
 *          are measured over the first RN_ROWS_SAMPLE rows; later rows
 *          stream with those widths (a wider cell is printed whole), so
 *          memory stays bounded for any number of rows.
 *   csv    a header line and one line per row, quoted as RFC 4180 says
 *          (a field holding a comma, quote, CR or LF is quoted, quotes
 *          doubled); streamed.
 *   json   "[", then the rows as "\n  {...}" joined by ",", then "\n]\n"
 *          ("[\n]\n" when empty); numbers bare, NaN/inf and null as null,
 *          booleans true/false, text quoted.  Options embed the array in an
 *          enclosing object (no trailing newline) or print an object keyed
 *          by the first column's text instead of an array.  Streamed.
 * Quoting and escaping happen here and nowhere else.  Depends only on stdio
 * and rn_error, so every module may use it.
 */
#ifndef RN_ROWS_H
#define RN_ROWS_H

#include <stdint.h>
#include <stdio.h>

#include "rn_error.h"

enum { RN_FMT_TABLE = 0, RN_FMT_CSV = 1, RN_FMT_JSON = 2 };

/* "table", "csv" or "json" -> *fmt; anything else is RN_EINPUT
 * "--format: 'x' is not table, csv or json". */
int rn_format_parse(const char *s, int *fmt, rn_error *err);

/* Rows measured for table widths before the rest stream. */
#define RN_ROWS_SAMPLE 1000
/* Room for one formatted number (a real's printf format included). */
#define RN_ROWS_CELL 512

enum { RN_CELL_NULL = 0, RN_CELL_INT, RN_CELL_UINT, RN_CELL_REAL, RN_CELL_BOOL, RN_CELL_TEXT };

/* One typed cell.  text is the TEXT cell's text, a NULL cell's display
 * text in table and CSV (NULL: empty; JSON prints null), or a REAL cell's
 * printf format for one double (NULL: the shortest text that reads back
 * exactly; JSON prints the same text bare, so a format meant for JSON must
 * print a number, and NaN / inf become null).  BOOL prints true / false.
 * quote makes CSV quote a TEXT cell even when it need not. */
typedef struct {
    int type;
    int quote;
    const char *text;
    union { int64_t i; uint64_t u; double d; int b; } v;
} rn_cell;

static inline rn_cell rn_cell_null(const char *display)
{ rn_cell c = { RN_CELL_NULL, 0, display, { 0 } }; return c; }
static inline rn_cell rn_cell_int(int64_t v)
{ rn_cell c = { RN_CELL_INT, 0, NULL, { 0 } }; c.v.i = v; return c; }
static inline rn_cell rn_cell_uint(uint64_t v)
{ rn_cell c = { RN_CELL_UINT, 0, NULL, { 0 } }; c.v.u = v; return c; }
static inline rn_cell rn_cell_real(double v, const char *fmt)
{ rn_cell c = { RN_CELL_REAL, 0, fmt, { 0 } }; c.v.d = v; return c; }
static inline rn_cell rn_cell_bool(int v)
{ rn_cell c = { RN_CELL_BOOL, 0, NULL, { 0 } }; c.v.b = !!v; return c; }
static inline rn_cell rn_cell_text(const char *s)
{ rn_cell c = { RN_CELL_TEXT, 0, s ? s : "", { 0 } }; return c; }
/* Text that CSV always quotes (e.g. token pieces, which may hold spaces). */
static inline rn_cell rn_cell_qtext(const char *s)
{ rn_cell c = { RN_CELL_TEXT, 1, s ? s : "", { 0 } }; return c; }

typedef struct {
    int json_embed;  /* JSON: no trailing newline, for a value inside an enclosing object */
    int json_keyed;  /* JSON: {"<first cell>": {other columns}, ...} instead of an array */
    int csv_no_header; /* CSV: rows only (a later part of one file) */
} rn_rows_opts;

/* The writer's state (fields are private). */
typedef struct {
    FILE *f;
    int fmt, ncol, rc;
    rn_rows_opts opts;
    char **names;      /* [ncol] copies */
    int64_t rows;
    /* table */
    int *width;        /* [ncol] */
    int *numeric;      /* [ncol] 1 while every non-empty measured cell is a number */
    char **sample;     /* [RN_ROWS_SAMPLE * ncol] measured cells' text */
    int *sample_num;   /* [RN_ROWS_SAMPLE * ncol] */
    int nsample, flushed;
    char *line_buf;    /* [ncol * RN_ROWS_CELL] streamed rows' formatted cells */
    const char **line; /* [ncol] */
    char *out;         /* a CSV row being assembled, written with one fwrite */
    size_t out_len, out_cap;
} rn_rows;

/* Start a result of ncol columns named names (copied) on f in fmt; opts
 * may be NULL.  CSV prints the header now.  On failure (out of memory) the
 * writer is left freed and later calls are no-ops. */
int rn_rows_begin(rn_rows *w, FILE *f, int fmt, int ncol, const char *const *names,
                  const rn_rows_opts *opts, rn_error *err);

/* Add one row of ncol cells (text is copied when the writer keeps it). */
int rn_rows_add(rn_rows *w, const rn_cell *cells);

/* Finish: print what is held (table), close the JSON, flush, check the
 * stream (RN_EIO) and free.  Always frees; returns the first error. */
int rn_rows_end(rn_rows *w, rn_error *err);

/* s as a JSON string literal (quote, backslash and control characters
 * escaped): the one JSON escaper, also for the keys a caller writes
 * around an embedded result. */
void rn_json_string(FILE *f, const char *s);

/* A real in the shortest text that reads back exactly (%.15g, else %.9g
 * when v is exactly a float, else %.17g) into buf. */
const char *rn_real_text(double v, char *buf, size_t cap);

#endif
