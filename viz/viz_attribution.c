/* viz_attribution.c — labelled token x token matrices (viz_attribution.h). */
#include "viz_attribution.h"

#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>

#include "viz_axes.h"
#include "viz_colorbar.h"
#include "viz_raster.h"

static uint32_t rgb_to_argb(viz_rgb c)
{
    return 0xff000000u | (uint32_t)lround(c.r * 255) << 16 | (uint32_t)lround(c.g * 255) << 8 |
           (uint32_t)lround(c.b * 255);
}

/* Axis of n categories; rows read top-down so the y axis is reversed by
 * listing labels last-first. */
static int make_labels(const char *const *src, int n, int reverse, char ***out, char **store)
{
    *out = calloc((size_t)n, sizeof **out);
    *store = malloc((size_t)n * 16);
    if (!*out || !*store) return -1;
    for (int i = 0; i < n; i++) {
        int k = reverse ? n - 1 - i : i;
        if (src && src[k]) (*out)[i] = (char *)src[k];
        else {
            (*out)[i] = *store + i * 16;
            snprintf((*out)[i], 16, "%d", k);
        }
    }
    return 0;
}

static void margins(cairo_t *cr, const viz_axis *x, const viz_axis *y, double font, double *l, double *b)
{
    double xe = viz_axis_cat_extent(cr, x, font), ye = viz_axis_cat_extent(cr, y, font);
    *l = ye + font * 3.0;
    *b = (xe > font * 1.2 ? xe : font * 1.2) + font * 2.6;
    if (*l < font * 4.8) *l = font * 4.8;
}

viz_rect viz_matrix_area(cairo_t *cr, viz_rect r, const viz_matrix_data *d, double font)
{
    char **xl = NULL, **yl = NULL, *xs = NULL, *ys = NULL;
    viz_rect a = r;
    if (!make_labels(d->col_labels, d->cols, 0, &xl, &xs) && !make_labels(d->row_labels, d->rows, 1, &yl, &ys)) {
        viz_axis x = { 0, d->cols, 0, 1, NULL, (const char *const *)xl, d->cols };
        viz_axis y = { 0, d->rows, 0, 1, NULL, (const char *const *)yl, d->rows };
        double l, b;
        margins(cr, &x, &y, font, &l, &b);
        a = viz_rect_inset(r, l, d->title[0] ? font * 2.0 : font * 0.8, viz_colorbar_width(font) + font * 1.2, b);
    }
    free(xl); free(yl); free(xs); free(ys);
    return a;
}

int viz_matrix_draw(cairo_t *cr, viz_rect r, const viz_matrix_data *d, viz_cmap cmap, double font,
                    rn_error *err)
{
    if (d->rows < 1 || d->cols < 1) return rn_seterr(err, RN_EINPUT, "attribution plot: empty matrix");
    char **xl = NULL, **yl = NULL, *xs = NULL, *ys = NULL;
    int rc = RN_OK;
    viz_raster ras = { 0, 0, 0, NULL };
    if (make_labels(d->col_labels, d->cols, 0, &xl, &xs) || make_labels(d->row_labels, d->rows, 1, &yl, &ys)) {
        rc = rn_seterr(err, RN_ENOMEM, "out of memory");
        goto done;
    }
    double lo = 0, hi = 0, pos_min = 0, amax = 0;
    for (size_t i = 0; i < (size_t)d->rows * d->cols; i++) {
        if (d->v[i] < lo) lo = d->v[i];
        if (d->v[i] > hi) hi = d->v[i];
        if (fabs(d->v[i]) > amax) amax = fabs(d->v[i]);
        if (d->v[i] > 0 && (pos_min == 0 || d->v[i] < pos_min)) pos_min = d->v[i];
    }
    int log = d->log && hi > 0;
    if (log) {
        lo = pos_min > hi * 1e-4 ? pos_min : hi * 1e-4;
        if (!(hi > lo)) hi = lo * 10;
    } else if (viz_cmap_diverging(cmap)) { /* 0 in the middle: symmetric limits */
        lo = amax > 0 ? -amax : -1;
        hi = amax > 0 ? amax : 1;
    }
    if (!(hi > lo)) hi = lo + 1;
    viz_rect a = viz_matrix_area(cr, r, d, font);
    rc = viz_raster_init(&ras, d->cols, d->rows, 0xffffffffu, err);
    if (rc) goto done;
    int zeros = 0; /* log scale: cells of exactly 0 (none), drawn in VIZ_ZERO_RGB */
    for (int y = 0; y < d->rows; y++)
        for (int x = 0; x < d->cols; x++) {
            double v = d->v[(size_t)y * d->cols + x];
            uint32_t *px = &ras.px[(size_t)y * ras.stride + x];
            if (d->mask_future && x > y) {
                *px = rgb_to_argb(VIZ_MASK_RGB);
                continue;
            }
            if (log && v <= 0) { /* nothing on a log scale: not the bottom colour */
                *px = rgb_to_argb(VIZ_ZERO_RGB);
                zeros = 1;
                continue;
            }
            double t = log ? (v > lo ? log10(v / lo) / log10(hi / lo) : 0) : (v - lo) / (hi - lo);
            if (isfinite(v)) *px = viz_cmap_argb(cmap, t);
        }
    viz_raster_paint(cr, &ras, a);
    viz_axis x = { 0, d->cols, 0, 1, d->x_label ? d->x_label : "written by token", (const char *const *)xl, d->cols };
    viz_axis y = { 0, d->rows, 0, 1, d->y_label ? d->y_label : "read by token", (const char *const *)yl, d->rows };
    viz_axes_draw(cr, a, &x, &y, font, d->title, 0);
    viz_axis v = viz_axis_make(lo, hi, log, 0, d->value_label ? d->value_label : "attribution");
    /* keys under the bar: the zero cells' colour, the future's grey */
    int nkeys = zeros + (d->mask_future != 0);
    double bh = a.h - font * 1.6 * nkeys;
    viz_colorbar_draw(cr, viz_rect_make(a.x + a.w + font * 1.2, a.y, font * 1.1, bh), cmap, &v, font);
    for (int k = 0; k < nkeys; k++) {
        int is_zero = zeros && k == 0;
        double zy = a.y + a.h - font * 1.0 - font * 1.6 * (nkeys - 1 - k);
        cairo_save(cr);
        viz_set_rgb(cr, is_zero ? VIZ_ZERO_RGB : VIZ_MASK_RGB);
        cairo_rectangle(cr, a.x + a.w + font * 1.2, zy, font * 1.1, font * 1.0);
        cairo_fill_preserve(cr);
        viz_set_rgb(cr, VIZ_INK_RGB);
        cairo_set_line_width(cr, 1.0);
        if (is_zero) cairo_stroke(cr); /* a white box needs its outline */
        else cairo_new_path(cr);
        viz_font(cr, font * 0.85, 0);
        viz_text(cr, a.x + a.w + font * 2.8, zy + font * 0.5, is_zero ? "0 (none)" : "future", 0, 0.5, 0);
        cairo_restore(cr);
    }
done:
    viz_raster_free(&ras);
    free(xl); free(yl); free(xs); free(ys);
    return rc;
}
