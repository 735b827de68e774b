/* viz_reuse.c — reuse histograms and CDFs (viz_reuse.h). */
#include "viz_reuse.h"

#include <stdio.h>

#include "viz_axes.h"
#include "viz_colormap.h"

viz_rect viz_reuse_area(viz_rect cell, double font)
{
    return viz_axes_inner(cell, font, 1);
}

static void bin_label(double lo, char *buf, size_t cap)
{
    if (lo >= 1e6) snprintf(buf, cap, "%.0e", lo);
    else snprintf(buf, cap, "%.0f", lo);
}

void viz_reuse_summary(const viz_hist_data *h, char *buf, size_t cap)
{
    double total = 0;
    for (int b = 0; b < h->n_bins; b++) total += h->count[b];
    double all = total + h->cold;
    snprintf(buf, cap, "%.0f reused accesses, %.1f%% cold", total, all > 0 ? 100.0 * h->cold / all : 0.0);
}

double viz_reuse_edge_x(viz_rect a, int n_bins, int b)
{
    return a.x + a.w * b / (n_bins > 0 ? n_bins : 1);
}

/* Ticks and labels on the bin edges below area a: each bin's lower bound
 * at its left edge, thinned so labels keep apart; a label always has its
 * tick.  Returns nothing; draws with the ink colour. */
static void edge_ticks(cairo_t *cr, viz_rect a, const viz_hist_data *h, double font)
{
    char buf[32];
    double tick = font * 0.4, last_right = -1e9;
    cairo_save(cr);
    viz_font(cr, font * 0.88, 0);
    viz_set_rgb(cr, VIZ_INK_RGB);
    cairo_set_line_width(cr, 1.0);
    for (int b = 0; b < h->n_bins; b++) {
        bin_label(h->lo[b], buf, sizeof buf);
        double x = viz_reuse_edge_x(a, h->n_bins, b), w = viz_text_width(cr, buf);
        if (x - w / 2 < last_right + font * 0.5) continue;
        last_right = x + w / 2;
        cairo_move_to(cr, x, a.y + a.h);
        cairo_line_to(cr, x, a.y + a.h + tick);
        cairo_stroke(cr);
        viz_text(cr, x, a.y + a.h + tick + 2, buf, 0.5, 0, 0);
    }
    cairo_restore(cr);
}

/* One row: bars of the per-bin fraction, then the cumulative staircase. */
static int draw_row(cairo_t *cr, viz_rect left, viz_rect right, const viz_hist_data *h, int idx,
                    double font, rn_error *err)
{
    double total = 0;
    for (int b = 0; b < h->n_bins; b++) total += h->count[b];
    if (h->n_bins < 1 || !(total > 0))
        return rn_seterr(err, RN_EINPUT, "%s: no reused accesses to plot", h->name);
    double fmax = 0;
    for (int b = 0; b < h->n_bins; b++)
        if (h->count[b] / total > fmax) fmax = h->count[b] / total;
    viz_rgb col = viz_palette(idx);

    /* the x axis draws no ticks of its own (a categorical axis of no
     * items): edge_ticks puts them on the bin edges */
    static const char *const none[1] = { NULL };
    char xl[160], title[200];
    snprintf(xl, sizeof xl, "%s, bins start at the ticks", h->name);
    viz_axis x = { 0, h->n_bins, 0, 1, xl, none, 0 };
    viz_axis y = viz_axis_make(0, fmax > 0 ? viz_nice_num(fmax * 1.05, 0) : 1, 0, 0, "fraction of accesses");
    if (y.hi > 1) y.hi = 1;
    viz_rect a = viz_reuse_area(left, font);
    snprintf(title, sizeof title, "%s", h->name);
    viz_axes_draw(cr, a, &x, &y, font, title, 1);
    edge_ticks(cr, a, h, font);
    viz_set_rgb(cr, col);
    for (int b = 0; b < h->n_bins; b++) {
        double x0 = viz_axis_map(&x, b + 0.1, a.x, a.x + a.w), x1 = viz_axis_map(&x, b + 0.9, a.x, a.x + a.w);
        double y0 = viz_axis_map(&y, h->count[b] / total, a.y + a.h, a.y);
        cairo_rectangle(cr, x0, y0, x1 - x0, a.y + a.h - y0);
    }
    cairo_fill(cr);

    viz_axis yc = viz_axis_make(0, 1, 0, 0, "cumulative fraction of accesses");
    viz_rect c = viz_reuse_area(right, font);
    snprintf(title, sizeof title, "%s: CDF", h->name);
    viz_axes_draw(cr, c, &x, &yc, font, title, 1);
    edge_ticks(cr, c, h, font);
    viz_set_rgb(cr, col);
    cairo_set_line_width(cr, 2.0);
    double cum = 0;
    cairo_move_to(cr, c.x, c.y + c.h);
    for (int b = 0; b < h->n_bins; b++) {
        cum += h->count[b] / total;
        double X1 = viz_axis_map(&x, b + 1, c.x, c.x + c.w);
        double X0 = viz_axis_map(&x, b, c.x, c.x + c.w);
        double Y = viz_axis_map(&yc, cum, c.y + c.h, c.y);
        cairo_line_to(cr, X0, Y);
        cairo_line_to(cr, X1, Y);
    }
    cairo_stroke(cr);
    return RN_OK;
}

int viz_reuse_draw(cairo_t *cr, viz_rect r, const viz_hist_data *h, int n, double font,
                   viz_rect *cells, rn_error *err)
{
    if (n < 1) return rn_seterr(err, RN_EINPUT, "reuse plot: nothing selected");
    for (int i = 0; i < n; i++) {
        viz_rect L = viz_rect_grid(r, n, 2, 2 * i, font), R = viz_rect_grid(r, n, 2, 2 * i + 1, font);
        if (cells) { cells[2 * i] = L; cells[2 * i + 1] = R; }
        int rc = draw_row(cr, L, R, &h[i], i, font, err);
        if (rc) return rc;
    }
    return RN_OK;
}
