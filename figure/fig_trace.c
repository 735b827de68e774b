/* fig_trace.c — `plot trace`: slot (or, with --addr, address) against
 * position, one panel per selected head (viz/viz_trace.h draws the grid),
 * marked where the run's prompt ends and its generation begins.  --title
 * names the one panel, or heads the page above several. */
#include <stdio.h>
#include <stdlib.h>

#include "fig_ctx.h"
#include "fig_figure.h"

static int draw(fig_ctx *f, rn_error *err);

const fig_kind_def fig_kind_trace = {
    .name = "trace", .order = 10, .input = FIG_INPUT_TRACE, .draw = draw,
    .help = "memory slot x token position, writes vermilion, reads blue\n"
            "(opacity by weight), one panel per selected head",
};

typedef struct {
    const fig_ctx *f;
    viz_trace_data *d;
    int n, cols;
} trace_page;

static int draw_trace(cairo_t *cr, double W, double H, void *user, rn_error *err)
{
    const trace_page *p = user;
    viz_trace_style st;
    viz_trace_style_default(&st);
    st.font = p->f->font;
    st.show_writes = rn_ops_has(p->f->ops, RN_OP_WRITE);
    st.show_reads = rn_ops_has(p->f->ops, RN_OP_READ);
    if (p->f->o->palette == 1) viz_trace_style_paper(&st);
    if (p->f->o->addr) st.ylabel = "address (before CAPE)";
    viz_rect r = viz_rect_make(4, 4, W - 8, H - 8);
    if (p->f->o->title && p->n > 1) {
        fig_page_title(cr, W, p->f->font * 1.1, p->f->o->title);
        r = viz_rect_inset(r, 0, p->f->font * 1.6, 0, 0);
    }
    return viz_trace_grid_draw(cr, r, p->d, p->n, p->cols, &st, NULL, err);
}

static int draw(fig_ctx *f, rn_error *err)
{
    int n = f->n_heads, cols = viz_grid_cols(n, f->o->cols), rows = (n + cols - 1) / cols;
    viz_trace_data *d = calloc((size_t)n, sizeof *d);
    viz_access **ev = calloc((size_t)n, sizeof *ev);
    int rc = (!d || !ev) ? rn_seterr(err, RN_ENOMEM, "out of memory") : RN_OK;
    int64_t gen = 0; /* the first generated position (0: the run generated nothing) */
    tr_token *tok = NULL;
    int64_t ntok = 0;
    if (!rc) rc = tr_load_tokens(f->run.db, f->run.run.run_id, &tok, &ntok, err);
    for (int64_t t = 0; t < ntok; t++)
        if (tok[t].generated) {
            gen = tok[t].pos;
            break;
        }
    free(tok);
    for (int i = 0; i < n && !rc; i++) {
        rc = fig_load_head(f, &f->heads[i], &ev[i], &d[i].n, err);
        d[i].ev = ev[i];
        d[i].pos_lo = f->lo;
        d[i].pos_hi = f->hi;
        d[i].n_slots = f->M;
        d[i].gen_pos = gen;
        if (f->o->title && n == 1) snprintf(d[i].title, sizeof d[i].title, "%s", f->o->title);
        else fig_head_title(&f->heads[i], d[i].title, sizeof d[i].title);
    }
    if (!rc) {
        trace_page p = { f, d, n, cols };
        double title_h = f->o->title && n > 1 ? f->font * 1.6 : 0;
        rc = fig_render(f, fig_dflt(f->o->width, cols * 620.0), fig_dflt(f->o->height, rows * 400.0 + 30 + title_h),
                        draw_trace, &p, err);
    }
    for (int i = 0; ev && i < n; i++) free(ev[i]);
    free(ev);
    free(d);
    return rc;
}
