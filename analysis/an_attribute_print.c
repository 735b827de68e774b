/* an_attribute_print.c — printing attributions (`ramtrace attribute`):
 * the per-token table / CSV / JSON, the per-term CSV (--detail) and the
 * token x token matrix CSV (--matrix), all through the row writer
 * (core/base/rn_rows.h) so quoting and number formats match the other commands. */
#include "an_attribute.h"

#include <math.h>
#include <stdlib.h>

#include "rn_rows.h"

static int cmp_coef_desc(const void *a, const void *b)
{
    double x = fabs(((const an_attr_token *)a)->coef), y = fabs(((const an_attr_token *)b)->coef);
    return (x < y) - (x > y);
}

/* The piece of the token at pos (tokens sorted by pos); "" if untraced. */
static const char *piece_of(const tr_token *t, int64_t nt, int32_t pos)
{
    int64_t a = 0, b = nt;
    while (a < b) { int64_t m = (a + b) / 2; if (t[m].pos < pos) a = m + 1; else b = m; }
    return a < nt && t[a].pos == pos ? t[a].piece : "";
}

int an_attribution_print(FILE *f, int fmt, an_attribution *a, int layer, int head, const tr_token *toks,
                         int64_t nt, int64_t top, rn_error *err)
{
    qsort(a->tokens, a->n_tokens, sizeof *a->tokens, cmp_coef_desc);
    size_t shown = top && (size_t)top < a->n_tokens ? (size_t)top : a->n_tokens;
    /* CSV adds the token's piece; JSON has no piece; the table shows the
     * share as a percentage and the piece as "token". */
    static const char *const csv_cols[4] = { "pos", "coef", "share", "piece" };
    static const char *const table_cols[4] = { "pos", "coef", "share", "token" };
    int ncol = fmt == RN_FMT_JSON ? 3 : 4;
    const rn_rows_opts embed = { .json_embed = 1 };
    if (fmt == RN_FMT_JSON) {
        fprintf(f, "{\"layer\": %d, \"head\": %d, \"pos\": %d, \"total\": ", layer, head, a->pos);
        if (isfinite(a->total)) fprintf(f, "%.6g", a->total);
        else fputs("null", f);
        fputs(", \"tokens\": ", f);
    } else if (fmt == RN_FMT_TABLE) {
        fprintf(f, "read of layer %d head %d at pos %d: %zu writing tokens, total weight %.4f\n", layer, head,
                a->pos, a->n_tokens, a->total);
    }
    rn_rows w;
    int rc = rn_rows_begin(&w, f, fmt, ncol, fmt == RN_FMT_TABLE ? table_cols : csv_cols, &embed, err);
    if (rc) return rc;
    for (size_t i = 0; i < shown; i++) {
        double share = a->total != 0 ? a->tokens[i].coef / a->total : 0;
        const char *pc = piece_of(toks, nt, a->tokens[i].pos);
        rn_cell c[4] = { rn_cell_int(a->tokens[i].pos), rn_cell_real(a->tokens[i].coef, "%.6g"),
                         rn_cell_real(share, "%.6g"), rn_cell_qtext(pc) };
        if (fmt == RN_FMT_TABLE) {
            c[1] = rn_cell_real(a->tokens[i].coef, "%.6f");
            c[2] = rn_cell_real(100 * share, "%.1f%%");
            c[3] = rn_cell_text(pc);
        }
        if (rn_rows_add(&w, c)) break;
    }
    if ((rc = rn_rows_end(&w, err))) return rc;
    if (fmt == RN_FMT_JSON) fputs("}\n", f);
    return ferror(f) ? rn_seterr(err, RN_EIO, "writing the output failed") : RN_OK;
}

int an_attribution_print_terms(FILE *f, const an_attribution *a, rn_error *err)
{
    static const char *const cols[8] = { "pos", "slot", "read_rank", "w", "r", "decay", "z", "coef" };
    rn_rows w;
    int rc = rn_rows_begin(&w, f, RN_FMT_CSV, 8, cols, NULL, err);
    if (rc) return rc;
    for (size_t i = 0; i < a->n_terms; i++) {
        const an_attr_term *t = &a->terms[i];
        const rn_cell c[8] = { rn_cell_int(t->pos), rn_cell_uint(t->slot), rn_cell_int(t->read_rank),
                               rn_cell_real(t->w, "%.6g"), rn_cell_real(t->r, "%.6g"),
                               rn_cell_real(t->decay, "%.6g"), rn_cell_real(t->z, "%.6g"),
                               rn_cell_real(t->coef, "%.6g") };
        rn_rows_add(&w, c);
    }
    return rn_rows_end(&w, err);
}

int an_matrix_print_csv(FILE *f, const an_matrix *m, rn_error *err)
{
    /* Columns: "pos", then each writing position's number as its name. */
    size_t ncol = (size_t)m->n + 1;
    char *text = malloc(ncol * 12);
    const char **names = malloc(ncol * sizeof *names);
    rn_cell *c = malloc(ncol * sizeof *c);
    if (!text || !names || !c) {
        free(text); free(names); free(c);
        return rn_seterr(err, RN_ENOMEM, "out of memory for the matrix");
    }
    names[0] = "pos";
    for (int64_t j = 0; j < m->n; j++) {
        snprintf(text + 12 * j, 12, "%d", m->pos[j]);
        names[j + 1] = text + 12 * j;
    }
    rn_rows w;
    int rc = rn_rows_begin(&w, f, RN_FMT_CSV, (int)ncol, names, NULL, err);
    if (!rc) {
        for (int64_t i = 0; i < m->n; i++) {
            c[0] = rn_cell_int(m->pos[i]);
            for (int64_t j = 0; j < m->n; j++) c[j + 1] = rn_cell_real(m->values[i * m->n + j], "%.6g");
            if (rn_rows_add(&w, c)) break;
        }
        rc = rn_rows_end(&w, err);
    }
    free(text); free(names); free(c);
    return rc;
}
