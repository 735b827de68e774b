/* fig_reuse.c — `plot reuse`: reuse-time and stack-distance histograms
 * (analysis/an_reuse.h) of a scope's streams, drawn by viz/viz_reuse.h. */
#include <stdio.h>

#include "an_reuse.h"
#include "fig_ctx.h"
#include "fig_figure.h"
#include "viz_reuse.h"

static int draw(fig_ctx *f, rn_error *err);

const fig_kind_def fig_kind_reuse = {
    .name = "reuse", .order = 40, .input = FIG_INPUT_TRACE, .draw = draw,
    .help = "reuse-time and stack-distance histograms and CDFs",
};

typedef struct {
    const fig_ctx *f;
    const viz_hist_data *d;
    const char *title;
} reuse_page;

static int draw_reuse(cairo_t *cr, double W, double H, void *user, rn_error *err)
{
    const reuse_page *p = user;
    fig_page_title(cr, W, p->f->font * 1.15, p->title);
    viz_rect r = viz_rect_inset(viz_rect_make(4, 4, W - 8, H - 8), 0, p->f->font * 1.8, 0, 0);
    return viz_reuse_draw(cr, r, p->d, 2, p->f->font, NULL, err);
}

static int draw(fig_ctx *f, rn_error *err)
{
    const fig_opts *o = f->o;
    int scope;
    an_streams ss;
    int rc = fig_load_streams(f, &scope, &ss, err);
    if (rc) return rc;
    an_hist hist[2];
    rc = an_reuse_hists(&ss, hist, err);
    int n_streams = ss.n;
    an_streams_free(&ss);
    if (rc) return rc;
    double lo[2][AN_HIST_BINS], hi[2][AN_HIST_BINS], cnt[2][AN_HIST_BINS];
    viz_hist_data d[2];
    const char *names[2] = { "reuse time (tokens)", "stack distance (slots)" };
    for (int m = 0; m < 2; m++) {
        for (int b = 0; b < hist[m].n_bins; b++) {
            lo[m][b] = (double)hist[m].lo[b];
            hi[m][b] = (double)hist[m].hi[b];
            cnt[m][b] = (double)hist[m].count[b];
        }
        d[m] = (viz_hist_data){ names[m], hist[m].n_bins, lo[m], hi[m], cnt[m], (double)hist[m].cold };
    }
    char t[256], sum[96];
    viz_reuse_summary(&d[0], sum, sizeof sum); /* both histograms count the same accesses */
    if (o->title) snprintf(t, sizeof t, "%s", o->title);
    else
        snprintf(t, sizeof t, "slot reuse per %s cache, %d stream%s: %s", rn_scope_name(scope), n_streams,
                 n_streams == 1 ? "" : "s", sum);
    reuse_page p = { f, d, t };
    return fig_render(f, fig_dflt(o->width, 1000), fig_dflt(o->height, 720), draw_reuse, &p, err);
}
