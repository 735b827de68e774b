/* fig_attribution.c — `plot attribution`: one head's token x token matrix
 * of how much each read draws on each earlier write (analysis/
 * an_attribute.h), drawn by viz/viz_attribution.h. */
#include <stdio.h>
#include <stdlib.h>

#include "an_attribute.h"
#include "fig_ctx.h"
#include "fig_figure.h"
#include "viz_attribution.h"

static int draw(fig_ctx *f, rn_error *err);

const fig_kind_def fig_kind_attribution = {
    .name = "attribution", .order = 50, .input = FIG_INPUT_TRACE, .draw = draw,
    .help = "one head's token x token attribution matrix",
};

typedef struct {
    const fig_ctx *f;
    const viz_matrix_data *d;
} attr_page;

static int draw_attribution(cairo_t *cr, double W, double H, void *user, rn_error *err)
{
    const attr_page *p = user;
    return viz_matrix_draw(cr, viz_rect_make(4, 4, W - 8, H - 8), p->d, p->f->o->cmap, p->f->font, err);
}

/* The traced piece of position p as a label: whitespace made visible
 * (space ␣, newline ⏎, tab ⇥; the trace stores \n and \t escaped). */
static void visible_piece(const char *piece, char *out, size_t cap)
{
    size_t k = 0;
    for (const char *c = piece; *c && k + 4 < cap; c++) {
        const char *rep = NULL;
        if (*c == ' ') rep = "\xe2\x90\xa3";
        else if (*c == '\n' || (c[0] == '\\' && c[1] == 'n')) rep = "\xe2\x8f\x8e";
        else if (*c == '\t' || (c[0] == '\\' && c[1] == 't')) rep = "\xe2\x87\xa5";
        else if (*c == '\r' || (c[0] == '\\' && c[1] == 'r')) rep = "\xe2\x86\xb5";
        if (rep) {
            if (*c == '\\') c++;
            for (const char *r = rep; *r; r++) out[k++] = *r;
        } else
            out[k++] = *c;
    }
    out[k] = 0;
}

/* The traced piece of position p ("" if none). */
static const char *piece_at(const tr_token *tok, int64_t n, int32_t p)
{
    for (int64_t t = 0; t < n; t++)
        if (tok[t].pos == p) return tok[t].piece;
    return "";
}

static int draw(fig_ctx *f, rn_error *err)
{
    const fig_opts *o = f->o;
    if (f->n_heads != 1)
        return rn_seterr(err, RN_EINPUT, "attribution: select exactly one head with --layers L --heads H (%d selected)",
                         f->n_heads);
    const tr_head_info *h = &f->heads[0];
    const rn_config *cfg = &f->run.run.cfg;
    /* attribution needs the memory's whole history: load from position 0 */
    int64_t hi = f->hi, lo = f->lo;
    if (o->pos_hi < 0 && hi - lo > 48) hi = lo + 48;
    tr_event *ev;
    size_t n;
    int rc = an_run_load_range(&f->run, h->layer, h->head, RN_OPS_BOTH, 0, hi, &ev, &n, err);
    if (rc) return rc;
    an_matrix m;
    rc = an_attribute_matrix_range(ev, n, f->M, cfg->gamma, cfg->eps, lo, hi, 4096, &m, err);
    free(ev);
    if (rc) return rc;
    tr_token *tok = NULL;
    int64_t ntok = 0;
    rc = tr_load_tokens(f->run.db, f->run.run.run_id, &tok, &ntok, err);
    /* the sub-matrix of positions in [lo, hi) */
    int64_t first = 0, k = 0;
    while (first < m.n && m.pos[first] < lo) first++;
    while (first + k < m.n && m.pos[first + k] < hi) k++;
    double *v = malloc(sizeof *v * (size_t)(k * k + 1));
    const char **labels = calloc((size_t)k + 1, sizeof *labels);
    char (*buf)[40] = calloc((size_t)k + 1, sizeof *buf);
    if (!rc && (!v || !labels || !buf)) rc = rn_seterr(err, RN_ENOMEM, "out of memory");
    if (!rc && k == 0)
        rc = rn_seterr(err, RN_EINPUT, "%s: no positions with events in [%lld, %lld)", o->db_path, (long long)lo,
                       (long long)hi);
    if (!rc) {
        for (int64_t i = 0; i < k; i++) {
            for (int64_t j = 0; j < k; j++) v[i * k + j] = m.values[(first + i) * m.n + first + j];
            int32_t p = m.pos[first + i];
            char vis[64];
            visible_piece(piece_at(tok, ntok, p), vis, sizeof vis);
            snprintf(buf[i], sizeof buf[i], "%d %s", p, vis);
            labels[i] = buf[i];
        }
        viz_matrix_data d = { (int)k, (int)k, v, labels, labels, "", "attribution", NULL, NULL, 1, o->log };
        if (o->title) snprintf(d.title, sizeof d.title, "%s", o->title);
        else
            snprintf(d.title, sizeof d.title, "attribution, layer %d, head %d, CAPE %s", h->layer, h->head,
                     h->cape ? "on" : "off");
        attr_page p = { f, &d };
        rc = fig_render(f, fig_dflt(o->width, 860), fig_dflt(o->height, 800), draw_attribution, &p, err);
    }
    free(v); free(labels); free(buf); free(tok);
    an_matrix_free(&m);
    return rc;
}
