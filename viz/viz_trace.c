/* viz_trace.c — memory-trace panels (viz_trace.h).
 *
 * Each panel is rasterised: every event is binned into the raster cell of
 * its (pos, slot), keeping per cell the strongest write and the strongest
 * read; the cell is then white, overlaid by green at the read's opacity and
 * red at the write's.  The raster has one pixel per data cell when cells are
 * larger than a device pixel, so small traces stay crisp squares.
 */
#include "viz_trace.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "viz_axes.h"
#include "viz_legend.h"
#include "viz_raster.h"

void viz_trace_style_default(viz_trace_style *st)
{
    st->font = VIZ_FONT_SIZE;
    st->show_writes = 1;
    st->show_reads = 1;
    st->min_alpha = 0.25;
    st->legend = 1;
}

viz_rect viz_trace_area(viz_rect r, const viz_trace_data *d, const viz_trace_style *st)
{
    return viz_axes_inner(r, st->font, d->title[0] != 0);
}

viz_rect viz_trace_cell(viz_rect a, const viz_trace_data *d, int64_t pos, int64_t slot)
{
    double np = (double)(d->pos_hi - d->pos_lo), ns = (double)d->n_slots;
    double cw = a.w / np, ch = a.h / ns;
    return viz_rect_make(a.x + (pos - d->pos_lo) * cw, a.y + a.h - (slot + 1) * ch, cw, ch);
}

static double blend(double bg, double fg, double a) { return bg + (fg - bg) * a; }

static uint32_t pix(double r, double g, double b)
{
    return 0xff000000u | (uint32_t)lround(r * 255) << 16 | (uint32_t)lround(g * 255) << 8 |
           (uint32_t)lround(b * 255);
}

/* Bin events into the raster and colour it; wmax normalises opacity. */
static int rasterise(cairo_t *cr, viz_rect a, const viz_trace_data *d, const viz_trace_style *st,
                     viz_raster *ras, rn_error *err)
{
    int64_t np = d->pos_hi - d->pos_lo, ns = d->n_slots;
    int W = viz_raster_dim(cr, np, a.w, 1), H = viz_raster_dim(cr, ns, a.h, 0);
    int rc = viz_raster_init(ras, W, H, 0xffffffffu, err);
    if (rc) return rc;
    float *acc = calloc((size_t)W * H * 2, sizeof *acc); /* [cell][0 write, 1 read] */
    if (!acc) {
        viz_raster_free(ras);
        return rn_seterr(err, RN_ENOMEM, "out of memory for a %dx%d trace panel", W, H);
    }
    float wmax = 0;
    for (size_t i = 0; i < d->n; i++)
        if (d->ev[i].weight > wmax) wmax = d->ev[i].weight;
    if (!(wmax > 0)) wmax = 1;
    for (size_t i = 0; i < d->n; i++) {
        const viz_access *e = &d->ev[i];
        if (e->pos < d->pos_lo || e->pos >= d->pos_hi || e->slot < 0 || e->slot >= ns) continue;
        if (e->op == RN_OP_WRITE ? !st->show_writes : !st->show_reads) continue;
        int x = (int)((e->pos - d->pos_lo) * W / np);
        int y = H - 1 - (int)(e->slot * H / ns);
        float w = e->weight > 0 ? e->weight : 0;
        float *c = &acc[((size_t)y * W + x) * 2 + (e->op == RN_OP_WRITE ? 0 : 1)];
        if (w / wmax > *c) *c = w / wmax;
        else if (*c == 0) *c = 1e-9f; /* present, weightless */
    }
    double lo = st->min_alpha < 0 ? 0 : st->min_alpha > 1 ? 1 : st->min_alpha;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const float *c = &acc[((size_t)y * W + x) * 2];
            if (c[0] == 0 && c[1] == 0) continue;
            double r = 1, g = 1, b = 1;
            if (c[1] > 0) {
                double al = lo + (1 - lo) * c[1];
                r = blend(r, VIZ_READ_RGB.r, al); g = blend(g, VIZ_READ_RGB.g, al); b = blend(b, VIZ_READ_RGB.b, al);
            }
            if (c[0] > 0) {
                double al = lo + (1 - lo) * c[0];
                r = blend(r, VIZ_WRITE_RGB.r, al); g = blend(g, VIZ_WRITE_RGB.g, al); b = blend(b, VIZ_WRITE_RGB.b, al);
            }
            ras->px[(size_t)y * ras->stride + x] = pix(r, g, b);
        }
    free(acc);
    return RN_OK;
}

int viz_trace_draw(cairo_t *cr, viz_rect r, const viz_trace_data *d, const viz_trace_style *st,
                   rn_error *err)
{
    if (d->pos_hi <= d->pos_lo || d->n_slots < 1)
        return rn_seterr(err, RN_EINPUT, "trace plot '%s': empty position or slot range", d->title);
    viz_rect a = viz_trace_area(r, d, st);
    viz_raster ras;
    int rc = rasterise(cr, a, d, st, &ras, err);
    if (rc) return rc;
    viz_raster_paint(cr, &ras, a);
    viz_raster_free(&ras);
    viz_axis x = viz_axis_make((double)d->pos_lo, (double)d->pos_hi, 0, 1, "token position");
    viz_axis y = viz_axis_make(0, (double)d->n_slots, 0, 1, "memory slot");
    viz_axes_draw(cr, a, &x, &y, st->font, d->title, 0);
    return RN_OK;
}

int viz_grid_cols(int n, int cols)
{
    if (cols > 0) return cols < n ? cols : (n > 0 ? n : 1);
    int c = 1;
    while (c * c < n) c++;
    return c;
}

int viz_trace_grid_draw(cairo_t *cr, viz_rect r, const viz_trace_data *d, int n, int cols,
                        const viz_trace_style *st, viz_rect *cells, rn_error *err)
{
    if (n < 1) return rn_seterr(err, RN_EINPUT, "trace plot: no heads selected");
    cols = viz_grid_cols(n, cols);
    int rows = (n + cols - 1) / cols;
    viz_rect body = r;
    if (st->legend) {
        viz_legend_entry e[2] = { { "write", VIZ_WRITE_RGB, VIZ_LEGEND_BOX },
                                  { "read", VIZ_READ_RGB, VIZ_LEGEND_BOX } };
        body = viz_rect_inset(r, 0, st->font * 1.8, 0, 0);
        viz_legend_draw(cr, body, e, 2, VIZ_ABOVE, st->font);
    }
    for (int i = 0; i < n; i++) {
        viz_rect c = viz_rect_grid(body, rows, cols, i, st->font * 0.5);
        if (cells) cells[i] = c;
        int rc = viz_trace_draw(cr, c, &d[i], st, err);
        if (rc) return rc;
    }
    return RN_OK;
}
