/* viz_reuse.c — reuse histograms and CDFs (viz_reuse.h). */
#include "viz_reuse.h"

#include <stdio.h>
#include <stdlib.h>

#include "viz_axes.h"
#include "viz_colormap.h"

viz_rect viz_reuse_area(viz_rect cell, double font)
{
    return viz_axes_inner(cell, font, 1);
}

static void bin_label(double lo, double hi, char *buf, size_t cap)
{
    if (lo >= 1e6) snprintf(buf, cap, "%.0e", lo);
    else snprintf(buf, cap, "%.0f", lo);
    (void)hi;
}

/* One row: bars of the per-bin fraction, then the cumulative staircase. */
static int draw_row(cairo_t *cr, viz_rect left, viz_rect right, const viz_hist_data *h, int idx,
                    double font, rn_error *err)
{
    double total = 0;
    for (int b = 0; b < h->n_bins; b++) total += h->count[b];
    if (h->n_bins < 1 || !(total > 0))
        return rn_seterr(err, RN_EINPUT, "%s: no reused accesses to plot", h->name);
    char **labels = calloc((size_t)h->n_bins, sizeof *labels);
    char *store = malloc((size_t)h->n_bins * 24);
    if (!labels || !store) {
        free(labels);
        free(store);
        return rn_seterr(err, RN_ENOMEM, "out of memory");
    }
    double fmax = 0;
    for (int b = 0; b < h->n_bins; b++) {
        labels[b] = store + b * 24;
        bin_label(h->lo[b], h->hi[b], labels[b], 24);
        if (h->count[b] / total > fmax) fmax = h->count[b] / total;
    }
    char title[200];
    double all = total + h->cold;
    snprintf(title, sizeof title, "%s: %.0f reused, %.1f%% cold", h->name, total,
             all > 0 ? 100.0 * h->cold / all : 0.0);
    viz_rgb col = viz_palette(idx);

    viz_axis x = { 0, h->n_bins, 0, 1, "bin (lower bound)", (const char *const *)labels, h->n_bins };
    viz_axis y = viz_axis_make(0, fmax > 0 ? viz_nice_num(fmax * 1.05, 0) : 1, 0, 0, "fraction");
    if (y.hi > 1) y.hi = 1;
    viz_rect a = viz_reuse_area(left, font);
    viz_axes_draw(cr, a, &x, &y, font, title, 1);
    viz_set_rgb(cr, col);
    for (int b = 0; b < h->n_bins; b++) {
        double x0 = viz_axis_map(&x, b + 0.1, a.x, a.x + a.w), x1 = viz_axis_map(&x, b + 0.9, a.x, a.x + a.w);
        double y0 = viz_axis_map(&y, h->count[b] / total, a.y + a.h, a.y);
        cairo_rectangle(cr, x0, y0, x1 - x0, a.y + a.h - y0);
    }
    cairo_fill(cr);

    viz_axis yc = viz_axis_make(0, 1, 0, 0, "cumulative fraction");
    viz_rect c = viz_reuse_area(right, font);
    snprintf(title, sizeof title, "%s: CDF", h->name);
    viz_axes_draw(cr, c, &x, &yc, font, title, 1);
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
    free(store);
    free(labels);
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
