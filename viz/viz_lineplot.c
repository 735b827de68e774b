/* viz_lineplot.c — multi-series line charts (viz_lineplot.h). */
#include "viz_lineplot.h"

#include <math.h>

#include "viz_colormap.h"

void viz_lineplot_style_default(viz_lineplot_style *st)
{
    viz_axis z = { 0, 0, 0, 0, NULL, NULL, 0 };
    st->x = z;
    st->y = z;
    st->title = NULL;
    st->font = VIZ_FONT_SIZE;
    st->legend = 1;
    st->corner = VIZ_BOTTOM_RIGHT;
    st->markers = 1;
    st->steps = 0;
    st->looks = 0;
}

static void fit_axis(const viz_series *s, int n, viz_axis *ax, int use_x)
{
    if (ax->hi != ax->lo) return;
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++)
        for (size_t j = 0; j < s[i].n; j++) {
            double v = use_x ? s[i].x[j] : s[i].y[j];
            if (!isfinite(v) || (ax->log && v <= 0)) continue;
            if (v < lo) lo = v;
            if (v > hi) hi = v;
        }
    if (!(lo <= hi)) { lo = ax->log ? 1 : 0; hi = ax->log ? 10 : 1; }
    if (ax->log) {
        /* the data's own span (a little padded), so curves fill the width */
        if (hi <= lo) { lo /= 2; hi *= 2; }
        lo /= 1.08;
        hi *= 1.08;
    } else {
        if (hi == lo) { lo -= 0.5; hi += 0.5; }
        double step = viz_nice_num((hi - lo) / 5, 1);
        lo = floor(lo / step) * step;
        hi = ceil(hi / step) * step;
    }
    ax->lo = lo;
    ax->hi = hi;
}

void viz_lineplot_fit(const viz_series *s, int n, viz_axis *x, viz_axis *y)
{
    fit_axis(s, n, x, 1);
    fit_axis(s, n, y, 0);
}

viz_rect viz_lineplot_area(viz_rect r, const viz_lineplot_style *st)
{
    return viz_axes_inner(r, st->font, st->title != NULL);
}

int viz_lineplot_draw(cairo_t *cr, viz_rect r, const viz_series *s, int n,
                      const viz_lineplot_style *st, rn_error *err)
{
    return viz_lineplot_draw_ex(cr, r, s, n, st, NULL, NULL, err);
}

int viz_lineplot_draw_ex(cairo_t *cr, viz_rect r, const viz_series *s, int n, const viz_lineplot_style *st,
                         viz_axis *xa, viz_rect *area, rn_error *err)
{
    size_t pts = 0;
    for (int i = 0; i < n; i++) pts += s[i].n;
    if (n < 1 || pts == 0)
        return rn_seterr(err, RN_EINPUT, "%s: nothing to plot", st->title ? st->title : "line plot");
    viz_axis x = st->x, y = st->y;
    viz_lineplot_fit(s, n, &x, &y);
    viz_rect a = viz_lineplot_area(r, st);
    if (xa) *xa = x;
    if (area) *area = a;
    viz_axes_draw(cr, a, &x, &y, st->font, st->title, 1);
    cairo_save(cr);
    cairo_rectangle(cr, a.x - 3, a.y - 3, a.w + 6, a.h + 6);
    cairo_clip(cr);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    for (int i = 0; i < n; i++) {
        int thin = s[i].thin_of > 0, look = thin || !st->looks ? 0 : i + 1;
        viz_set_rgb(cr, viz_palette(thin ? s[i].thin_of - 1 : i));
        cairo_set_line_width(cr, thin ? 1.0 : 2.0);
        viz_look_apply(cr, look);
        int pen = 0;
        double px = 0, py = 0;
        for (size_t j = 0; j < s[i].n; j++) {
            double xv = s[i].x[j], yv = s[i].y[j];
            if (!isfinite(xv) || !isfinite(yv) || (x.log && xv <= 0) || (y.log && yv <= 0)) {
                pen = 0;
                continue;
            }
            double X = viz_axis_map(&x, xv, a.x, a.x + a.w), Y = viz_axis_map(&y, yv, a.y + a.h, a.y);
            if (!pen) cairo_move_to(cr, X, Y);
            else if (st->steps) { cairo_line_to(cr, X, py); cairo_line_to(cr, X, Y); }
            else cairo_line_to(cr, X, Y);
            pen = 1;
            px = X;
            py = Y;
        }
        (void)px;
        cairo_stroke(cr);
        cairo_set_dash(cr, NULL, 0, 0);
        if (s[i].ylo && s[i].yhi) {
            cairo_set_line_width(cr, 1.4);
            for (size_t j = 0; j < s[i].n; j++) {
                double xv = s[i].x[j], l = s[i].ylo[j], h = s[i].yhi[j];
                if (!isfinite(xv) || !isfinite(l) || !isfinite(h) || (x.log && xv <= 0) ||
                    (y.log && (l <= 0 || h <= 0)))
                    continue;
                double X = viz_axis_map(&x, xv, a.x, a.x + a.w);
                double Y0 = viz_axis_map(&y, l, a.y + a.h, a.y), Y1 = viz_axis_map(&y, h, a.y + a.h, a.y);
                cairo_move_to(cr, X, Y0);
                cairo_line_to(cr, X, Y1);
                cairo_move_to(cr, X - 4, Y0);
                cairo_line_to(cr, X + 4, Y0);
                cairo_move_to(cr, X - 4, Y1);
                cairo_line_to(cr, X + 4, Y1);
            }
            cairo_stroke(cr);
        }
        if (st->markers && !thin && s[i].n <= 64)
            for (size_t j = 0; j < s[i].n; j++) {
                double xv = s[i].x[j], yv = s[i].y[j];
                if (!isfinite(xv) || !isfinite(yv) || (x.log && xv <= 0) || (y.log && yv <= 0)) continue;
                double X = viz_axis_map(&x, xv, a.x, a.x + a.w), Y = viz_axis_map(&y, yv, a.y + a.h, a.y);
                if (look) viz_look_marker(cr, look, X, Y, 3.2);
                else {
                    cairo_arc(cr, X, Y, 2.8, 0, 2 * M_PI);
                    cairo_fill(cr);
                }
            }
    }
    cairo_restore(cr);
    if (st->legend) {
        viz_legend_entry e[16];
        int m = n < 16 ? n : 16;
        for (int i = 0; i < m; i++) {
            int thin = s[i].thin_of > 0;
            e[i] = (viz_legend_entry){ s[i].name, viz_palette(thin ? s[i].thin_of - 1 : i), VIZ_LEGEND_LINE,
                                       thin || !st->looks ? 0 : i + 1, thin ? 1.0 : 0 };
        }
        viz_legend_draw(cr, a, e, m, st->corner, st->font);
    }
    return RN_OK;
}
