/* viz_trace.c — memory-trace panels (viz_trace.h).
 *
 * Each panel is rasterised: every event is binned into the raster cell of
 * its (pos, slot), keeping per cell the strongest write and the strongest
 * read; the cell is then white, overlaid by the read colour at the read's
 * opacity and the write colour at the write's.  Opacity is normalised per
 * op (each op's strongest access in the panel is opaque), so reads, whose
 * weights are smaller than writes', are as visible as writes.  The raster
 * has one pixel per data cell when cells are larger than a device pixel, so
 * small traces stay crisp squares; with more tokens than columns it bins
 * them (viz_trace_bin) and the x-axis title gives the bin width.
 */
#include "viz_trace.h"

#include <math.h>
#include <stdio.h>
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
    st->write_rgb = VIZ_WRITE_RGB;
    st->read_rgb = VIZ_READ_RGB;
    st->ylabel = "slot (after CAPE)";
    st->x_title = 1;
    st->y_title = 1;
}

void viz_trace_style_paper(viz_trace_style *st)
{
    st->write_rgb = VIZ_PAPER_WRITE_RGB;
    st->read_rgb = VIZ_PAPER_READ_RGB;
}

int64_t viz_trace_bin(cairo_t *cr, int64_t np, double extent)
{
    int W = viz_raster_dim(cr, np, extent, 1);
    return W > 0 && np > W ? (np + W - 1) / W : 1;
}

void viz_trace_xtitle(char *buf, size_t n, int64_t bin)
{
    if (bin > 1) snprintf(buf, n, "token position (%lld tokens per column)", (long long)bin);
    else snprintf(buf, n, "token position");
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
    float wmax[2] = { 0, 0 }; /* per op: 0 write, 1 read */
    for (size_t i = 0; i < d->n; i++) {
        int k = d->ev[i].op == RN_OP_WRITE ? 0 : 1;
        if (d->ev[i].weight > wmax[k]) wmax[k] = d->ev[i].weight;
    }
    for (int k = 0; k < 2; k++)
        if (!(wmax[k] > 0)) wmax[k] = 1;
    for (size_t i = 0; i < d->n; i++) {
        const viz_access *e = &d->ev[i];
        if (e->pos < d->pos_lo || e->pos >= d->pos_hi || e->slot < 0 || e->slot >= ns) continue;
        if (e->op == RN_OP_WRITE ? !st->show_writes : !st->show_reads) continue;
        int k = e->op == RN_OP_WRITE ? 0 : 1;
        int x = (int)((e->pos - d->pos_lo) * W / np);
        int y = H - 1 - (int)(e->slot * H / ns);
        float w = e->weight > 0 ? e->weight : 0;
        float *c = &acc[((size_t)y * W + x) * 2 + k];
        if (w / wmax[k] > *c) *c = w / wmax[k];
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
                r = blend(r, st->read_rgb.r, al); g = blend(g, st->read_rgb.g, al); b = blend(b, st->read_rgb.b, al);
            }
            if (c[0] > 0) {
                double al = lo + (1 - lo) * c[0];
                r = blend(r, st->write_rgb.r, al); g = blend(g, st->write_rgb.g, al); b = blend(b, st->write_rgb.b, al);
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
    if (d->gen_pos > d->pos_lo && d->gen_pos < d->pos_hi) {
        /* where the prompt ends and generation begins */
        double gx = viz_trace_cell(a, d, d->gen_pos, 0).x;
        cairo_save(cr);
        viz_set_rgb(cr, VIZ_INK_RGB);
        cairo_set_line_width(cr, 1.2);
        double dash[2] = { 4, 3 };
        cairo_set_dash(cr, dash, 2, 0);
        cairo_move_to(cr, gx, a.y);
        cairo_line_to(cr, gx, a.y + a.h);
        cairo_stroke(cr);
        viz_font(cr, st->font * 0.8, 0);
        const char *gl = "generation \xe2\x86\x92", *pl = "\xe2\x86\x90 prompt";
        double gw = viz_text_width(cr, gl), pw = viz_text_width(cr, pl), th = st->font * 1.0;
        cairo_set_source_rgba(cr, 1, 1, 1, 0.85); /* keep the labels readable over data */
        cairo_rectangle(cr, gx - pw - 5, a.y + 1, pw + gw + 10, th);
        cairo_fill(cr);
        viz_set_rgb(cr, VIZ_INK_RGB);
        viz_text(cr, gx + 3, a.y + 2, gl, 0, 0, 0);
        viz_text(cr, gx - 3, a.y + 2, pl, 1, 0, 0);
        cairo_restore(cr);
    }
    char xl[96];
    viz_trace_xtitle(xl, sizeof xl, viz_trace_bin(cr, d->pos_hi - d->pos_lo, a.w));
    viz_axis x = viz_axis_make((double)d->pos_lo, (double)d->pos_hi, 0, 1, st->x_title ? xl : NULL);
    viz_axis y = viz_axis_make(0, (double)d->n_slots, 0, 1, st->y_title ? st->ylabel : NULL);
    viz_axes_draw(cr, a, &x, &y, st->font, d->title, 0);
    return RN_OK;
}

/* The legend row above a grid: a swatch per op drawn, each an opacity ramp
 * from the weakest to the strongest access, and what the opacity means. */
static void trace_legend(cairo_t *cr, viz_rect body, const viz_trace_style *st)
{
    struct { const char *label; viz_rgb c; int on; } op[2] = {
        { "write", st->write_rgb, st->show_writes }, { "read", st->read_rgb, st->show_reads } };
    double lo = st->min_alpha < 0 ? 0 : st->min_alpha > 1 ? 1 : st->min_alpha;
    char note[96];
    snprintf(note, sizeof note, "opacity = access weight (weakest %.0f%%, strongest opaque, per op)", lo * 100);
    cairo_save(cr);
    viz_font(cr, st->font * 0.9, 0);
    double sw = st->font * 2.4, sh = st->font * 0.8, gap = st->font * 0.5, w = 0;
    for (int k = 0; k < 2; k++)
        if (op[k].on) w += sw + gap * 0.6 + viz_text_width(cr, op[k].label) + gap * 2;
    if (w + viz_text_width(cr, note) > body.w) /* a narrow page: the short form */
        snprintf(note, sizeof note, "opacity = weight (min %.0f%%)", lo * 100);
    w += viz_text_width(cr, note);
    double x = body.x + (body.w - w) / 2, yc = body.y - st->font * 0.9;
    for (int k = 0; k < 2; k++) {
        if (!op[k].on) continue;
        for (int i = 0; i < 4; i++) { /* four steps of the ramp */
            double al = lo + (1 - lo) * i / 3.0;
            cairo_set_source_rgba(cr, op[k].c.r, op[k].c.g, op[k].c.b, al);
            cairo_rectangle(cr, x + sw * i / 4, yc - sh / 2, sw / 4, sh);
            cairo_fill(cr);
        }
        viz_set_rgb(cr, VIZ_INK_RGB);
        x += sw + gap * 0.6;
        viz_text(cr, x, yc, op[k].label, 0, 0.5, 0);
        x += viz_text_width(cr, op[k].label) + gap * 2;
    }
    viz_set_rgb(cr, VIZ_INK_RGB);
    viz_text(cr, x, yc, note, 0, 0.5, 0);
    cairo_restore(cr);
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
        body = viz_rect_inset(r, 0, st->font * 1.8, 0, 0);
        trace_legend(cr, body, st);
    }
    for (int i = 0; i < n; i++) {
        viz_rect c = viz_rect_grid(body, rows, cols, i, st->font * 0.5);
        if (cells) cells[i] = c;
        viz_trace_style ps = *st; /* axis titles once: bottom row, left column */
        ps.x_title = st->x_title && (i + cols >= n);
        ps.y_title = st->y_title && (i % cols == 0);
        int rc = viz_trace_draw(cr, c, &d[i], &ps, err);
        if (rc) return rc;
    }
    return RN_OK;
}
