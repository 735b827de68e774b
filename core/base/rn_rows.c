/* rn_rows.c — the row writer: table, CSV and JSON from typed cells
 * (rn_rows.h).  All quoting, escaping and number formatting of row output
 * lives here. */
#include "rn_rows.h"

#include <stdlib.h>
#include <string.h>

int rn_format_parse(const char *s, int *fmt, rn_error *err)
{
    if (!strcmp(s, "table")) *fmt = RN_FMT_TABLE;
    else if (!strcmp(s, "csv")) *fmt = RN_FMT_CSV;
    else if (!strcmp(s, "json")) *fmt = RN_FMT_JSON;
    else return rn_seterr(err, RN_EINPUT, "--format: '%s' is not table, csv or json", s);
    return RN_OK;
}

const char *rn_real_text(double v, char *buf, size_t cap)
{
    /* A value that is exactly a float (trace weights) reads back from 9
     * digits as that float. */
    snprintf(buf, cap, "%.15g", v);
    if (strtod(buf, NULL) != v && v == v) {
        if ((double)(float)v == v) snprintf(buf, cap, "%.9g", v);
        else snprintf(buf, cap, "%.17g", v);
    }
    return buf;
}

void rn_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') { fputc('\\', f); fputc(*p, f); }
        else if (*p == '\n') fputs("\\n", f);
        else if (*p == '\t') fputs("\\t", f);
        else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

/* Decimal text of v (and a leading '-' when neg) into buf; returns buf. */
static const char *u64_text(uint64_t v, int neg, char *buf, size_t cap)
{
    char tmp[24];
    int n = 0;
    do { tmp[n++] = (char)('0' + v % 10); v /= 10; } while (v);
    size_t k = 0;
    if (neg && k + 1 < cap) buf[k++] = '-';
    while (n && k + 1 < cap) buf[k++] = tmp[--n];
    buf[k] = 0;
    return buf;
}

/* Text of a cell as table and CSV show it (text cells point at their own
 * text; others are formatted into buf). */
static const char *cell_text(const rn_cell *c, char *buf, size_t cap)
{
    switch (c->type) {
    case RN_CELL_INT:
        return u64_text(c->v.i < 0 ? 0 - (uint64_t)c->v.i : (uint64_t)c->v.i, c->v.i < 0, buf, cap);
    case RN_CELL_UINT: return u64_text(c->v.u, 0, buf, cap);
    case RN_CELL_REAL:
        if (!c->text) return rn_real_text(c->v.d, buf, cap);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        snprintf(buf, cap, c->text, c->v.d);
#pragma GCC diagnostic pop
        return buf;
    case RN_CELL_BOOL: return c->v.b ? "true" : "false";
    case RN_CELL_TEXT: return c->text;
    default: return c->text ? c->text : "";
    }
}

/* Append n bytes to the CSV row buffer (0, or RN_ENOMEM). */
static int out_put(rn_rows *w, const char *s, size_t n)
{
    if (w->out_len + n > w->out_cap) {
        size_t cap = w->out_cap ? w->out_cap : 256;
        while (cap < w->out_len + n) cap *= 2;
        char *o = realloc(w->out, cap);
        if (!o) return RN_ENOMEM;
        w->out = o;
        w->out_cap = cap;
    }
    memcpy(w->out + w->out_len, s, n);
    w->out_len += n;
    return RN_OK;
}

/* One CSV field into the row buffer, quoted as RFC 4180 says: a field
 * holding a comma, quote, CR or LF (or any, with force_quote) is enclosed
 * in quotes and its quotes doubled.  The only CSV quoter. */
static int out_csv(rn_rows *w, const char *s, int force_quote)
{
    size_t n = strlen(s);
    if (!force_quote && !strpbrk(s, ",\"\n\r")) return out_put(w, s, n);
    int rc = out_put(w, "\"", 1);
    for (const char *q; !rc && (q = strchr(s, '"')); s = q + 1)
        rc = out_put(w, s, (size_t)(q - s) + 1) || out_put(w, "\"", 1) ? RN_ENOMEM : RN_OK;
    if (!rc) rc = out_put(w, s, strlen(s));
    if (!rc) rc = out_put(w, "\"", 1);
    return rc;
}

static int is_number(const rn_cell *c)
{
    return c->type == RN_CELL_INT || c->type == RN_CELL_UINT || c->type == RN_CELL_REAL;
}

/* UTF-8 display width (code points). */
static int disp_width(const char *s)
{
    int w = 0;
    for (; *s; s++) w += ((unsigned char)*s & 0xC0) != 0x80;
    return w;
}

static void put_padded(FILE *f, const char *s, int width, int right)
{
    int pad = width - disp_width(s);
    if (right) for (int i = 0; i < pad; i++) fputc(' ', f);
    fputs(s, f);
    if (!right) for (int i = 0; i < pad; i++) fputc(' ', f);
}

/* One table line: cells padded to the measured widths, numbers right. */
static void table_line(rn_rows *w, const char *const *text)
{
    for (int c = 0; c < w->ncol; c++) {
        if (c) fputs("  ", w->f);
        if (c == w->ncol - 1 && !w->numeric[c]) fputs(text[c], w->f);
        else put_padded(w->f, text[c], w->width[c], w->numeric[c]);
    }
    fputc('\n', w->f);
}

/* Print the header, rule and measured rows; later rows stream. */
static void table_flush(rn_rows *w)
{
    if (w->flushed) return;
    w->flushed = 1;
    for (int c = 0; c < w->ncol; c++)
        if (!w->nsample) w->numeric[c] = 0;
    /* With no rows measured, a column is text (sql printed it so). */
    if (w->ncol) {
        table_line(w, (const char *const *)w->names);
        for (int c = 0; c < w->ncol; c++) {
            if (c) fputs("  ", w->f);
            for (int i = 0; i < w->width[c]; i++) fputc('-', w->f);
        }
        fputc('\n', w->f);
    }
    for (int r = 0; r < w->nsample; r++) table_line(w, (const char *const *)w->sample + (size_t)r * w->ncol);
    for (int i = 0; i < w->nsample * w->ncol; i++) free(w->sample[i]);
    free(w->sample);
    free(w->sample_num);
    w->sample = NULL;
    w->sample_num = NULL;
    w->nsample = 0;
}

static void rows_free(rn_rows *w)
{
    if (w->names) for (int c = 0; c < w->ncol; c++) free(w->names[c]);
    free(w->names);
    if (w->sample) for (int i = 0; i < w->nsample * w->ncol; i++) free(w->sample[i]);
    free(w->sample);
    free(w->sample_num);
    free(w->width);
    free(w->numeric);
    free(w->line_buf);
    free(w->line);
    free(w->out);
    w->out = NULL;
    w->line_buf = NULL;
    w->line = NULL;
    w->names = w->sample = NULL;
    w->sample_num = w->width = w->numeric = NULL;
}

int rn_rows_begin(rn_rows *w, FILE *f, int fmt, int ncol, const char *const *names,
                  const rn_rows_opts *opts, rn_error *err)
{
    memset(w, 0, sizeof *w);
    w->f = f;
    w->fmt = fmt;
    w->ncol = ncol;
    if (opts) w->opts = *opts;
    size_t n = (size_t)(ncol > 0 ? ncol : 1);
    w->names = calloc(n, sizeof *w->names);
    int oom = !w->names;
    for (int c = 0; c < ncol && !oom; c++) oom = !(w->names[c] = strdup(names[c] ? names[c] : ""));
    if (!oom && fmt == RN_FMT_TABLE) {
        w->width = calloc(n, sizeof *w->width);
        w->numeric = calloc(n, sizeof *w->numeric);
        oom = !w->width || !w->numeric;
        for (int c = 0; c < ncol && !oom; c++) {
            w->width[c] = disp_width(w->names[c]);
            w->numeric[c] = 1;
        }
    }
    if (oom) {
        rows_free(w);
        w->rc = RN_ENOMEM;
        return rn_seterr(err, RN_ENOMEM, "out of memory for the output rows");
    }
    if (fmt == RN_FMT_CSV && ncol && !w->opts.csv_no_header) {
        int rc = RN_OK;
        for (int c = 0; c < ncol && !rc; c++) {
            if (c) rc = out_put(w, ",", 1);
            if (!rc) rc = out_csv(w, w->names[c], 0);
        }
        if (!rc) rc = out_put(w, "\n", 1);
        if (rc) {
            rows_free(w);
            w->rc = RN_ENOMEM;
            return rn_seterr(err, RN_ENOMEM, "out of memory for the output rows");
        }
        fwrite(w->out, 1, w->out_len, f);
    } else if (fmt == RN_FMT_JSON) {
        fputc(w->opts.json_keyed ? '{' : '[', f);
    }
    return RN_OK;
}

/* One JSON value for a cell. */
static void json_value(FILE *f, const rn_cell *c)
{
    char buf[RN_ROWS_CELL];
    switch (c->type) {
    case RN_CELL_NULL: fputs("null", f); break;
    case RN_CELL_BOOL: fputs(c->v.b ? "true" : "false", f); break;
    case RN_CELL_TEXT: rn_json_string(f, c->text); break;
    case RN_CELL_REAL:
        if (c->v.d != c->v.d || c->v.d - c->v.d != 0) { fputs("null", f); break; } /* NaN / inf */
        /* fall through */
    default: fputs(cell_text(c, buf, sizeof buf), f); break;
    }
}

/* Keep one measured table row (copies of the cells' text). */
static int table_keep(rn_rows *w, const rn_cell *cells)
{
    if (!w->sample) {
        size_t n = (size_t)RN_ROWS_SAMPLE * (size_t)(w->ncol > 0 ? w->ncol : 1);
        w->sample = calloc(n, sizeof *w->sample);
        w->sample_num = calloc(n, sizeof *w->sample_num);
        if (!w->sample || !w->sample_num) return RN_ENOMEM;
    }
    char buf[RN_ROWS_CELL];
    char **row = w->sample + (size_t)w->nsample * w->ncol;
    int *num = w->sample_num + (size_t)w->nsample * w->ncol;
    int oom = 0;
    for (int c = 0; c < w->ncol; c++) {
        const char *t = cell_text(&cells[c], buf, sizeof buf);
        if (!(row[c] = strdup(t))) oom = 1;
        num[c] = is_number(&cells[c]);
        if (!num[c] && cells[c].type != RN_CELL_NULL && t[0]) w->numeric[c] = 0;
        int dw = disp_width(t);
        if (dw > w->width[c]) w->width[c] = dw;
    }
    w->nsample++;   /* counted even on failure, so rows_free frees what was copied */
    return oom ? RN_ENOMEM : RN_OK;
}

int rn_rows_add(rn_rows *w, const rn_cell *cells)
{
    if (w->rc) return w->rc;
    FILE *f = w->f;
    char buf[RN_ROWS_CELL];
    if (w->fmt == RN_FMT_CSV) {
        int rc = RN_OK;
        w->out_len = 0;
        for (int c = 0; c < w->ncol && !rc; c++) {
            if (c) rc = out_put(w, ",", 1);
            if (!rc) rc = out_csv(w, cell_text(&cells[c], buf, sizeof buf),
                                  cells[c].type == RN_CELL_TEXT && cells[c].quote);
        }
        if (!rc) rc = out_put(w, "\n", 1);
        if (rc) return w->rc = rc;
        fwrite(w->out, 1, w->out_len, f);
    } else if (w->fmt == RN_FMT_JSON) {
        fputs(w->rows ? ",\n  " : "\n  ", f);
        int c0 = 0;
        if (w->opts.json_keyed && w->ncol) {
            rn_json_string(f, cell_text(&cells[0], buf, sizeof buf));
            fputs(": ", f);
            c0 = 1;
        }
        fputc('{', f);
        for (int c = c0; c < w->ncol; c++) {
            if (c > c0) fputs(", ", f);
            rn_json_string(f, w->names[c]);
            fputs(": ", f);
            json_value(f, &cells[c]);
        }
        fputc('}', f);
    } else if (w->nsample < RN_ROWS_SAMPLE && !w->flushed) {
        if ((w->rc = table_keep(w, cells))) return w->rc;
    } else {
        table_flush(w);
        /* Streamed rows: formatted text per cell, widths as measured. */
        size_t n = (size_t)(w->ncol > 0 ? w->ncol : 1);
        if (!w->line_buf) {
            w->line_buf = malloc(n * RN_ROWS_CELL);
            w->line = malloc(n * sizeof *w->line);
            if (!w->line_buf || !w->line) return w->rc = RN_ENOMEM;
        }
        for (int c = 0; c < w->ncol; c++)
            w->line[c] = cell_text(&cells[c], w->line_buf + (size_t)c * RN_ROWS_CELL, RN_ROWS_CELL);
        table_line(w, w->line);
    }
    w->rows++;
    return RN_OK;
}

int rn_rows_end(rn_rows *w, rn_error *err)
{
    int rc = w->rc;
    if (!rc) {
        if (w->fmt == RN_FMT_TABLE) table_flush(w);
        else if (w->fmt == RN_FMT_JSON) {
            fputs(w->opts.json_keyed ? "\n}" : "\n]", w->f);
            if (!w->opts.json_embed) fputc('\n', w->f);
        }
    }
    rows_free(w);
    if (rc) return rn_seterr(err, rc, "out of memory for the output rows");
    if (fflush(w->f) != 0 || ferror(w->f)) return rn_seterr(err, RN_EIO, "writing the output failed");
    return RN_OK;
}
