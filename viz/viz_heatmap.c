/* viz_heatmap.c — slot x time access-count heatmaps and the model grid
 * (viz_heatmap.h).  Cells are rasterised one pixel per bin and painted
 * with nearest filtering. */
#include "viz_heatmap.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "viz_axes.h"
#include "viz_colorbar.h"
#include "viz_raster.h"

void viz_heatmap_style_default(viz_heatmap_style *st)
{
    st->font = VIZ_FONT_SIZE;
    st->cmap = VIZ_CMAP_VIRIDIS;
    st->log = 0;
    st->vmax = 0;
    st->vmin = 0;
    st->slot_label = "slot (after CAPE)";
    st->value_label = "accesses";
    st->layer_ids = NULL;
    st->head_ids = NULL;
}

void viz_heatmap_bin(const viz_access *ev, size_t n, int ops, int64_t pos_lo, int64_t pos_hi,
                     int64_t n_slots, int rows, int cols, float *out)
{
    memset(out, 0, sizeof *out * (size_t)rows * cols);
    int64_t np = pos_hi - pos_lo;
    if (np < 1 || n_slots < 1) return;
    for (size_t i = 0; i < n; i++) {
        const viz_access *e = &ev[i];
        if (!rn_ops_has(ops, e->op)) continue;
        if (e->pos < pos_lo || e->pos >= pos_hi || e->slot < 0 || e->slot >= n_slots) continue;
        int c = (int)((e->pos - pos_lo) * cols / np);
        int r = (int)(e->slot * rows / n_slots);
        out[(size_t)r * cols + c] += 1.0f;
    }
}

int64_t viz_heatmap_bin_width(int64_t span, int max_bins)
{
    if (span < 1) return 1;
    if (max_bins < 1) max_bins = 1;
    return (span + max_bins - 1) / max_bins;
}

double viz_heatmap_max(const viz_heatmap_data *d)
{
    double m = 0;
    for (size_t i = 0; i < (size_t)d->rows * d->cols; i++)
        if (d->v[i] > m) m = d->v[i];
    return m;
}

double viz_heatmap_min(const viz_heatmap_data *d)
{
    double m = 0;
    for (size_t i = 0; i < (size_t)d->rows * d->cols; i++)
        if (d->v[i] > 0 && (m == 0 || d->v[i] < m)) m = d->v[i];
    return m;
}

double viz_heatmap_scale(double v, double vmin, double vmax, int log)
{
    if (!(v > 0)) return -1;
    if (!(vmin > 0) || vmin > vmax) vmin = vmax;
    if (!(vmax > vmin)) return 1;
    double t = log ? log10(v / vmin) / log10(vmax / vmin) : (v - vmin) / (vmax - vmin);
    return t < 0 ? 0 : t > 1 ? 1 : t;
}

static int paint_cells(cairo_t *cr, viz_rect a, const viz_heatmap_data *d, viz_cmap cmap,
                       double vmin, double vmax, int log, rn_error *err)
{
    viz_raster ras;
    int rc = viz_raster_init(&ras, d->cols, d->rows, 0xffffffffu, err);
    if (rc) return rc;
    for (int r = 0; r < d->rows; r++)
        for (int c = 0; c < d->cols; c++) {
            double t = viz_heatmap_scale(d->v[(size_t)r * d->cols + c], vmin, vmax, log);
            if (t >= 0) ras.px[(size_t)(d->rows - 1 - r) * ras.stride + c] = viz_cmap_argb(cmap, t);
        }
    viz_raster_paint(cr, &ras, a);
    viz_raster_free(&ras);
    return RN_OK;
}

static viz_axis value_axis(const viz_heatmap_style *st, double vmin, double vmax)
{
    viz_axis v = viz_axis_make(vmin > 0 ? vmin : 1, vmax, st->log, 1, st->value_label);
    if (v.hi <= v.lo) v.hi = v.lo + 1;
    return v;
}

/* The colour bar in `bar`, less a white box at its foot that stands for
 * zero (cells with no access). */
static void draw_bar(cairo_t *cr, viz_rect bar, const viz_heatmap_style *st, double vmin, double vmax)
{
    double f = st->font, zh = f * 1.0, gap = f * 0.6;
    viz_rect b = viz_rect_make(bar.x, bar.y, bar.w, bar.h - zh - gap);
    viz_axis v = value_axis(st, vmin, vmax);
    viz_colorbar_draw(cr, b, st->cmap, &v, f);
    cairo_save(cr);
    /* name the bottom count when no tick does (the bar starts there) */
    double ticks[VIZ_MAX_TICKS], step;
    int target = (int)(b.h / (f * 2.5));
    int nt = viz_axis_ticks(&v, target < 2 ? 2 : target, ticks, VIZ_MAX_TICKS, &step);
    double first_y = nt > 0 ? viz_axis_map(&v, ticks[0], b.y + b.h, b.y) : b.y;
    if (nt == 0 || (ticks[0] > v.lo && b.y + b.h - first_y > f * 1.1)) {
        char lo[32];
        snprintf(lo, sizeof lo, "%g", v.lo);
        viz_set_rgb(cr, VIZ_INK_RGB);
        cairo_set_line_width(cr, 1.0);
        cairo_move_to(cr, b.x + b.w, b.y + b.h);
        cairo_line_to(cr, b.x + b.w + f * 0.35, b.y + b.h);
        cairo_stroke(cr);
        viz_font(cr, f * 0.85, 0);
        viz_text(cr, b.x + b.w + f * 0.5, b.y + b.h, lo, 0, 0.5, 0);
    }
    double zy = bar.y + bar.h - zh;
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_rectangle(cr, bar.x, zy, bar.w, zh);
    cairo_fill_preserve(cr);
    viz_set_rgb(cr, VIZ_INK_RGB);
    cairo_set_line_width(cr, 1.0);
    cairo_stroke(cr);
    viz_font(cr, f * 0.85, 0);
    viz_text(cr, bar.x + bar.w + f * 0.5, zy + zh / 2, "0", 0, 0.5, 0);
    cairo_restore(cr);
}

/* Bin widths as text: "4" or "2.5". */
static void width_text(char *buf, size_t cap, double span, int n)
{
    snprintf(buf, cap, "%.3g", span / (n > 0 ? n : 1));
}

viz_rect viz_heatmap_area(viz_rect r, const viz_heatmap_data *d, const viz_heatmap_style *st)
{
    viz_rect a = viz_axes_inner(r, st->font, d->title[0] != 0);
    a.w -= viz_colorbar_width(st->font);
    if (a.w < 1) a.w = 1;
    return a;
}

int viz_heatmap_draw(cairo_t *cr, viz_rect r, const viz_heatmap_data *d, const viz_heatmap_style *st,
                     rn_error *err)
{
    if (d->rows < 1 || d->cols < 1 || !(d->x_hi > d->x_lo) || !(d->y_hi > d->y_lo))
        return rn_seterr(err, RN_EINPUT, "heatmap '%s': empty selection", d->title);
    double vmax = st->vmax > 0 ? st->vmax : viz_heatmap_max(d);
    double vmin = st->vmin > 0 ? st->vmin : viz_heatmap_min(d);
    viz_rect a = viz_heatmap_area(r, d, st);
    int rc = paint_cells(cr, a, d, st->cmap, vmin, vmax, st->log, err);
    if (rc) return rc;
    char xl[96], yl[96], w[32];
    width_text(w, sizeof w, d->x_hi - d->x_lo, d->cols);
    snprintf(xl, sizeof xl, "token position (%s per bucket)", w);
    width_text(w, sizeof w, d->y_hi - d->y_lo, d->rows);
    snprintf(yl, sizeof yl, "%s (%s per bin)", st->slot_label, w);
    viz_axis x = viz_axis_make(d->x_lo, d->x_hi, 0, 1, xl);
    viz_axis y = viz_axis_make(d->y_lo, d->y_hi, 0, 1, yl);
    viz_axes_draw(cr, a, &x, &y, st->font, d->title, 0);
    viz_rect bar = viz_rect_make(a.x + a.w + st->font * 1.2, a.y, st->font * 1.1, a.h);
    draw_bar(cr, bar, st, vmin, vmax);
    return RN_OK;
}

/* The thumbnails' axes: the position (x) and slot (y) axes of d. */
static void thumb_axes(const viz_heatmap_data *d, viz_axis *x, viz_axis *y)
{
    *x = viz_axis_make(d->x_lo, d->x_hi, 0, 1, NULL);
    *y = viz_axis_make(d->y_lo, d->y_hi, 0, 1, NULL);
}

/* Width of the widest y tick number of a thumbnail in the grid's number
 * font (f * 0.7). */
static double thumb_ylabel_width(cairo_t *cr, const viz_heatmap_data *d, double f)
{
    double ticks[VIZ_MAX_TICKS], step, w = 0;
    char lab[VIZ_MAX_TICKS][VIZ_TICK_LABEL];
    viz_axis x, y;
    thumb_axes(d, &x, &y);
    int n = viz_axis_ticks(&y, 4, ticks, VIZ_MAX_TICKS, &step);
    viz_axis_tick_labels(&y, ticks, n, step, lab);
    cairo_save(cr);
    viz_font(cr, f * 0.7, 0);
    for (int i = 0; i < n; i++) {
        double t = viz_text_width(cr, lab[i]);
        if (t > w) w = t;
    }
    cairo_restore(cr);
    return w;
}

/* Tick marks on a thumbnail's bottom and left edges at the nice positions
 * of its position and slot ranges, numbered under the grid's bottom row
 * (numbers_x) and beside its first column (numbers_y): every thumbnail of
 * the grid covers the same ranges.  A number that would reach past the
 * thumbnail's right edge (top edge) into the gap to its neighbour is left
 * out, except in the last column (first row), so that "1000" and the next
 * thumbnail's "0" never run together. */
static void thumb_ticks(cairo_t *cr, viz_rect c, const viz_heatmap_data *d, double font, int numbers_x,
                        int numbers_y, int last_col, int first_row, double gap)
{
    double ticks[VIZ_MAX_TICKS], step, len = font * 0.3;
    char lab[VIZ_MAX_TICKS][VIZ_TICK_LABEL];
    viz_axis x, y;
    thumb_axes(d, &x, &y);
    cairo_save(cr);
    viz_set_rgb(cr, VIZ_INK_RGB);
    cairo_set_line_width(cr, 0.8);
    viz_font(cr, font * 0.7, 0);
    int n = viz_axis_ticks(&x, 4, ticks, VIZ_MAX_TICKS, &step);
    viz_axis_tick_labels(&x, ticks, n, step, lab);
    double wmax = 0;
    for (int i = 0; i < n; i++)
        if (viz_text_width(cr, lab[i]) > wmax) wmax = viz_text_width(cr, lab[i]);
    if (n > 2 && c.w / n < wmax * 1.6) { /* numbers would touch: fewer ticks */
        n = viz_axis_ticks(&x, 2, ticks, VIZ_MAX_TICKS, &step);
        viz_axis_tick_labels(&x, ticks, n, step, lab);
    }
    for (int i = 0; i < n; i++) {
        double px = viz_axis_map(&x, ticks[i], c.x, c.x + c.w);
        cairo_move_to(cr, px, c.y + c.h);
        cairo_line_to(cr, px, c.y + c.h + len);
        cairo_stroke(cr);
        if (numbers_x && (last_col || px + viz_text_width(cr, lab[i]) / 2 <= c.x + c.w + gap / 2))
            viz_text(cr, px, c.y + c.h + len + 1, lab[i], 0.5, 0, 0);
    }
    n = viz_axis_ticks(&y, 4, ticks, VIZ_MAX_TICKS, &step);
    if (n > 2 && c.h / n < font * 0.7 * 1.6) n = viz_axis_ticks(&y, 2, ticks, VIZ_MAX_TICKS, &step);
    viz_axis_tick_labels(&y, ticks, n, step, lab);
    for (int i = 0; i < n; i++) {
        double py = viz_axis_map(&y, ticks[i], c.y + c.h, c.y);
        cairo_move_to(cr, c.x - len, py);
        cairo_line_to(cr, c.x, py);
        cairo_stroke(cr);
        if (numbers_y && (first_row || py - font * 0.4 >= c.y - gap / 2))
            viz_text(cr, c.x - len - 2, py, lab[i], 1, 0.5, 0);
    }
    cairo_restore(cr);
}

int viz_heatmap_grid_draw(cairo_t *cr, viz_rect r, const viz_heatmap_data *d, int n_layers,
                          int n_heads, const viz_heatmap_style *st, viz_rect *thumbs, rn_error *err)
{
    if (n_layers < 1 || n_heads < 1) return rn_seterr(err, RN_EINPUT, "heatmap grid: no heads selected");
    double vmax = st->vmax, vmin = st->vmin;
    if (!(vmax > 0))
        for (int i = 0; i < n_layers * n_heads; i++) {
            double m = viz_heatmap_max(&d[i]);
            if (m > vmax) vmax = m;
        }
    if (!(vmin > 0))
        for (int i = 0; i < n_layers * n_heads; i++) {
            double m = viz_heatmap_min(&d[i]);
            if (m > 0 && (vmin == 0 || m < vmin)) vmin = m;
        }
    double f = st->font;
    /* left of the grid: the slot numbers, then "layer l"; below it the
     * position numbers, then the line naming both axes */
    double ynum = thumb_ylabel_width(cr, &d[0], f);
    viz_rect body = viz_rect_inset(r, f * 2.4 + ynum, f * 1.8, viz_colorbar_width(f) + f * 1.2, f * 3.6);
    char buf[64];
    cairo_save(cr);
    for (int l = 0; l < n_layers; l++)
        for (int h = 0; h < n_heads; h++) {
            int i = l * n_heads + h;
            viz_rect c = viz_rect_grid(body, n_layers, n_heads, i, f * 0.35);
            if (thumbs) thumbs[i] = c;
            int rc = paint_cells(cr, c, &d[i], st->cmap, vmin, vmax, st->log, err);
            if (rc) { cairo_restore(cr); return rc; }
            viz_set_rgb(cr, VIZ_INK_RGB);
            cairo_set_line_width(cr, 0.8);
            cairo_rectangle(cr, c.x, c.y, c.w, c.h);
            cairo_stroke(cr);
            thumb_ticks(cr, c, &d[i], f, l == n_layers - 1, h == 0, h == n_heads - 1, l == 0, f * 0.35);
            if (d[i].title[0] && c.h > f) {
                viz_font(cr, f * 0.7, 1);
                cairo_font_extents_t fe;
                cairo_font_extents(cr, &fe);
                cairo_set_source_rgba(cr, 1, 1, 1, 0.85);
                cairo_rectangle(cr, c.x + 1, c.y + 1, viz_text_width(cr, d[i].title) + 4, fe.ascent + fe.descent);
                cairo_fill(cr);
                cairo_set_source_rgb(cr, 0.8, 0.08, 0.08);
                viz_text(cr, c.x + 3, c.y + 1, d[i].title, 0, 0, 0);
            }
            viz_set_rgb(cr, VIZ_INK_RGB);
            viz_font(cr, f * 0.85, 0);
            if (l == 0) {
                snprintf(buf, sizeof buf, "head %d", st->head_ids ? st->head_ids[h] : h);
                viz_text_fit(cr, c.x + c.w / 2, c.y - f * 0.3, buf, c.w + f * 0.3, 0.5, 1);
            }
            if (h == 0) {
                snprintf(buf, sizeof buf, "layer %d", st->layer_ids ? st->layer_ids[l] : l);
                viz_text(cr, c.x - f * 0.6 - ynum, c.y + c.h / 2, buf, 0.5, 1, -M_PI / 2);
            }
        }
    viz_font(cr, f, 0);
    viz_set_rgb(cr, VIZ_INK_RGB);
    char lx[128], ly[128], label[260], wx[32], wy[32];
    width_text(wx, sizeof wx, d[0].x_hi - d[0].x_lo, d[0].cols);
    width_text(wy, sizeof wy, d[0].y_hi - d[0].y_lo, d[0].rows);
    snprintf(lx, sizeof lx, "x: token position %g\xe2\x80\x93%g (%s per bucket)", d[0].x_lo, d[0].x_hi - 1, wx);
    snprintf(ly, sizeof ly, "y: %s %g\xe2\x80\x93%g (%s per bin)", st->slot_label, d[0].y_lo, d[0].y_hi - 1, wy);
    snprintf(label, sizeof label, "%s;  %s", lx, ly);
    if (viz_text_width(cr, label) <= body.w + f * 4) {
        viz_text(cr, body.x + body.w / 2, body.y + body.h + f * 1.5, label, 0.5, 0, 0);
    } else { /* a narrow grid: one line each, smaller */
        viz_font(cr, f * 0.85, 0);
        viz_text_fit(cr, body.x + body.w / 2, body.y + body.h + f * 1.3, lx, r.w, 0.5, 0);
        viz_text_fit(cr, body.x + body.w / 2, body.y + body.h + f * 2.3, ly, r.w, 0.5, 0);
    }
    cairo_restore(cr);
    viz_rect bar = viz_rect_make(body.x + body.w + f * 1.2, body.y, f * 1.1, body.h);
    draw_bar(cr, bar, st, vmin, vmax);
    return RN_OK;
}
