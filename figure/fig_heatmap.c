/* fig_heatmap.c — `plot heatmap`: access counts per slot bin and time
 * bucket, one head or a layers x heads grid (viz/viz_heatmap.h draws). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fig_ctx.h"
#include "fig_figure.h"
#include "viz_heatmap.h"

static int draw(fig_ctx *f, rn_error *err);

const fig_kind_def fig_kind_heatmap = {
    .name = "heatmap", .order = 20, .input = FIG_INPUT_TRACE, .draw = draw,
    .help = "access counts per slot bin and time bucket; one head, or with\n"
            "--model (or several heads selected) a layers x heads grid",
};

typedef struct {
    const fig_ctx *f;
    viz_heatmap_data *d;
    viz_heatmap_style st;
    int grid, nl, nh;
} heatmap_page;

static int draw_heatmap(cairo_t *cr, double W, double H, void *user, rn_error *err)
{
    heatmap_page *p = user;
    const fig_opts *o = p->f->o;
    viz_rect r = viz_rect_make(4, 4, W - 8, H - 8);
    (void)H;
    if (!p->grid) {
        if (o->title) snprintf(p->d[0].title, sizeof p->d[0].title, "%s", o->title);
        return viz_heatmap_draw(cr, r, &p->d[0], &p->st, err);
    }
    char t[256];
    const tr_run_info *run = &p->f->run.run;
    snprintf(t, sizeof t, "%s per slot and time bucket, %s", p->st.value_label,
             o->title ? o->title : run->name[0] ? run->name : "run");
    fig_page_title(cr, W, p->f->font * 1.1, t);
    r = viz_rect_inset(r, 0, p->f->font * 1.6, 0, 0);
    return viz_heatmap_grid_draw(cr, r, p->d, p->nl, p->nh, &p->st, NULL, err);
}

static int draw(fig_ctx *f, rn_error *err)
{
    const fig_opts *o = f->o;
    int64_t np = f->hi - f->lo;
    /* by default whole positions per bucket (at most 256 buckets) and whole
     * slots per bin (at most 128 bins): the last bucket or bin may cover
     * positions or slots past the end, and the axes run to its end */
    int64_t xw = viz_heatmap_bin_width(np, 256), yw = viz_heatmap_bin_width(f->M, 128);
    int cols = o->buckets > 0 ? o->buckets : (int)((np + xw - 1) / xw);
    int rows = o->slot_bins > 0 ? o->slot_bins : (int)((f->M + yw - 1) / yw);
    if (cols > np) cols = (int)np;
    if (rows > f->M) rows = (int)f->M;
    int64_t x_end = o->buckets > 0 ? f->hi : f->lo + cols * xw, y_end = o->slot_bins > 0 ? f->M : rows * yw;
    int grid = o->model || f->n_heads > 1;
    /* grid rows = distinct selected layers, columns = distinct heads */
    int layer_of[RN_MAX_LAYERS], head_of[RN_MAX_HEADS], nl = 0, nh = 0;
    int lidx[RN_MAX_LAYERS], hidx[RN_MAX_HEADS];
    memset(lidx, -1, sizeof lidx);
    memset(hidx, -1, sizeof hidx);
    for (int i = 0; i < f->n_heads; i++) {
        if (lidx[f->heads[i].layer] < 0) { lidx[f->heads[i].layer] = nl; layer_of[nl++] = f->heads[i].layer; }
        if (hidx[f->heads[i].head] < 0) { hidx[f->heads[i].head] = nh; head_of[nh++] = f->heads[i].head; }
    }
    if (!grid) nl = nh = 1;
    int cells = nl * nh;
    viz_heatmap_data *d = calloc((size_t)cells, sizeof *d);
    float *v = calloc((size_t)cells * rows * cols, sizeof *v);
    int rc = (!d || !v) ? rn_seterr(err, RN_ENOMEM, "out of memory for %d heatmaps", cells) : RN_OK;
    for (int c = 0; c < cells && !rc; c++)
        d[c] = (viz_heatmap_data){ rows, cols, v + (size_t)c * rows * cols, (double)f->lo, (double)x_end,
                                   0, (double)y_end, "" };
    for (int i = 0; i < f->n_heads && !rc; i++) {
        const tr_head_info *h = &f->heads[i];
        int c = grid ? lidx[h->layer] * nh + hidx[h->head] : 0;
        viz_access *ev;
        size_t n;
        rc = fig_load_head(f, h, &ev, &n, err);
        if (rc) break;
        viz_heatmap_bin(ev, n, f->ops, f->lo, x_end, y_end, rows, cols, (float *)d[c].v);
        free(ev);
        if (grid) snprintf(d[c].title, sizeof d[c].title, "%s", h->cape ? "CAPE" : "");
        else fig_head_title(h, d[c].title, sizeof d[c].title);
    }
    if (!rc) {
        heatmap_page p = { .f = f, .d = d, .grid = grid, .nl = nl, .nh = nh };
        viz_heatmap_style_default(&p.st);
        p.st.font = f->font;
        p.st.cmap = o->cmap;
        p.st.log = o->log;
        p.st.value_label = f->ops == RN_OPS_WRITE ? "writes" : f->ops == RN_OPS_READ ? "reads" : "accesses";
        p.st.layer_ids = layer_of;
        p.st.head_ids = head_of;
        rc = fig_render(f, fig_dflt(o->width, grid ? nh * 170.0 + 200 : 860),
                        fig_dflt(o->height, grid ? nl * 130.0 + 110 : 520), draw_heatmap, &p, err);
    }
    free(v);
    free(d);
    return rc;
}
