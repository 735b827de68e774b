/* viz_axes.c — nice-number ticks, log ticks and axis drawing (viz_axes.h). */
#include "viz_axes.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

double viz_nice_num(double x, int round)
{
    if (!(x > 0)) return 1;
    double e = floor(log10(x));
    double f = x / pow(10, e), nf;
    if (round) nf = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
    else nf = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
    return nf * pow(10, e);
}

/* Log ticks at m·10^d for the mantissas m of one set, thinned to every
 * `every`-th decade; ascending. */
static int log_ticks_with(double lo, double hi, const int *mant, int nm, int every, double *ticks, int max)
{
    int n = 0;
    double d0 = floor(log10(lo)), d1 = ceil(log10(hi));
    for (double d = d0; d <= d1 && n < max; d++) {
        if (((long)(d - d0)) % every) continue;
        double base = pow(10, d);
        for (int k = 0; k < nm && n < max; k++) {
            double v = mant[k] * base;
            if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) ticks[n++] = v;
        }
    }
    return n;
}

/* Log ticks: decades (every k-th, so at most about `target`); over short
 * ranges (under 2.5 decades) also the 2 and 5 multiples, and where that
 * still gives fewer than 4 ticks (a range of about one decade: 250 to
 * 2500 would show only 500, 1000, 2000) the 3 and 7 multiples too, then
 * every multiple. */
static int log_ticks(double lo, double hi, int target, double *ticks, int max)
{
    static const int m1[] = { 1 }, m125[] = { 1, 2, 5 }, m12357[] = { 1, 2, 3, 5, 7 },
                     mall[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
    double d0 = floor(log10(lo)), d1 = ceil(log10(hi));
    if (log10(hi / lo) >= 2.5) {
        int every = 1;
        while ((d1 - d0 + 1) / every > target) every++;
        return log_ticks_with(lo, hi, m1, 1, every, ticks, max);
    }
    int n = log_ticks_with(lo, hi, m125, 3, 1, ticks, max);
    if (n < 4 && n < target) {
        double t2[VIZ_MAX_TICKS];
        int n2 = log_ticks_with(lo, hi, m12357, 5, 1, t2, VIZ_MAX_TICKS);
        if (n2 < 4) n2 = log_ticks_with(lo, hi, mall, 9, 1, t2, VIZ_MAX_TICKS);
        if (n2 > n && n2 <= (target > 4 ? target : 4) + 2) {
            n = n2 < max ? n2 : max;
            for (int i = 0; i < n; i++) ticks[i] = t2[i];
        }
    }
    return n;
}

int viz_axis_ticks(const viz_axis *ax, int target, double *ticks, int max, double *step)
{
    double lo = ax->lo, hi = ax->hi;
    *step = 0;
    if (!(hi > lo) || max < 1) return 0;
    if (target < 2) target = 2;
    if (ax->log && lo > 0) return log_ticks(lo, hi, target, ticks, max);
    double range = viz_nice_num(hi - lo, 0);
    double d = viz_nice_num(range / (target - 1), 1);
    if (ax->integer && d < 1) d = 1;
    double t0 = ceil(lo / d - 1e-9) * d;
    int n = 0;
    for (double t = t0; t <= hi + d * 1e-9 && n < max; t = t0 + n * d) {
        ticks[n++] = fabs(t) < d * 1e-9 ? 0 : t;
    }
    *step = d;
    return n;
}

void viz_tick_label(double v, double step, int log, char *buf, size_t cap)
{
    double a = fabs(v);
    if (a != 0 && (a >= 1e6 || a < 1e-3)) {
        snprintf(buf, cap, "%.0e", v);
        if (log) return;
        /* keep the significant digits the step needs */
        int digits = step > 0 ? (int)ceil(log10(a) - log10(step)) : 1;
        snprintf(buf, cap, "%.*e", digits > 0 ? digits - 1 : 0, v);
        return;
    }
    int decimals = 0;
    if (!log && step > 0 && step < 1) decimals = (int)ceil(-log10(step) - 1e-9);
    if (log && a < 1) decimals = (int)ceil(-log10(a) - 1e-9);
    if (decimals > 6) decimals = 6;
    snprintf(buf, cap, "%.*f", decimals, v);
}

/* A log tick as mantissa and exponent: "1e4", "2e-3", "2.5e6". */
static void exp_label(double v, char *buf, size_t cap)
{
    if (v == 0) { snprintf(buf, cap, "0"); return; }
    double e = floor(log10(fabs(v)) + 1e-9);
    double m = v / pow(10, e);
    m = round(m * 100) / 100;
    if (fabs(m) >= 10) { m /= 10; e += 1; }
    snprintf(buf, cap, "%ge%d", m, (int)e);
}

void viz_axis_tick_labels(const viz_axis *ax, const double *ticks, int n, double step, char (*labels)[VIZ_TICK_LABEL])
{
    int log = ax->log && ax->lo > 0, exp_style = 0;
    if (log)
        for (int i = 0; i < n; i++) {
            double a = fabs(ticks[i]);
            if (a != 0 && (a >= 1e5 || a < 1e-3)) exp_style = 1;
        }
    for (int i = 0; i < n; i++) {
        if (exp_style) exp_label(ticks[i], labels[i], VIZ_TICK_LABEL);
        else viz_tick_label(ticks[i], step, log, labels[i], VIZ_TICK_LABEL);
    }
}

double viz_axis_map(const viz_axis *ax, double v, double a, double b)
{
    double t;
    if (ax->log && ax->lo > 0) {
        if (!(v > 0)) v = ax->lo;
        t = (log10(v) - log10(ax->lo)) / (log10(ax->hi) - log10(ax->lo));
    } else
        t = (v - ax->lo) / (ax->hi - ax->lo);
    return a + t * (b - a);
}

void viz_axes_margins(double font, int title, double *left, double *top, double *right,
                      double *bottom)
{
    *left = font * 4.8;
    *top = title ? font * 2.0 : font * 0.8;
    *right = font * 1.2;
    *bottom = font * 3.4;
}

viz_rect viz_axes_inner(viz_rect r, double font, int title)
{
    double l, t, rt, b;
    viz_axes_margins(font, title, &l, &t, &rt, &b);
    return viz_rect_inset(r, l, t, rt, b);
}

/* Widest label of a categorical axis in the tick font. */
static double cat_max_width(cairo_t *cr, const viz_axis *ax, double font)
{
    double m = 0;
    cairo_save(cr);
    viz_font(cr, font * 0.88, 0);
    for (int i = 0; i < ax->n_cats; i++) {
        double w = ax->cats[i] ? viz_text_width(cr, ax->cats[i]) : 0;
        if (w > m) m = w;
    }
    cairo_restore(cr);
    return m;
}

double viz_axis_cat_extent(cairo_t *cr, const viz_axis *ax, double font)
{
    return ax->cats ? cat_max_width(cr, ax, font) : 0;
}

/* Categorical ticks: every k-th item so labels keep `room` px apart. */
static void cat_ticks(cairo_t *cr, viz_rect in, const viz_axis *ax, int is_x, double font, double tick)
{
    double span = is_x ? in.w : in.h;
    double item = span / (ax->hi - ax->lo);
    double maxw = cat_max_width(cr, ax, font);
    int vertical = is_x && maxw > item * 0.95;
    double room = (is_x && !vertical) ? maxw + font * 0.6 : font * 1.05;
    int k = 1;
    while (item * k < room) k++;
    viz_font(cr, font * 0.88, 0);
    viz_set_rgb(cr, VIZ_INK_RGB);
    cairo_set_line_width(cr, 1.0);
    for (int i = (int)ceil(ax->lo); i < ax->n_cats && i < ax->hi; i += k) {
        double c = viz_axis_map(ax, i + 0.5, is_x ? in.x : in.y + in.h, is_x ? in.x + in.w : in.y);
        const char *s = ax->cats[i] ? ax->cats[i] : "";
        if (is_x) {
            cairo_move_to(cr, c, in.y + in.h);
            cairo_line_to(cr, c, in.y + in.h + tick);
            cairo_stroke(cr);
            if (vertical) viz_text(cr, c, in.y + in.h + tick + 2, s, 1, 0.5, -M_PI / 2);
            else viz_text(cr, c, in.y + in.h + tick + 2, s, 0.5, 0, 0);
        } else {
            cairo_move_to(cr, in.x - tick, c);
            cairo_line_to(cr, in.x, c);
            cairo_stroke(cr);
            viz_text(cr, in.x - tick - 3, c, s, 1, 0.5, 0);
        }
    }
}

void viz_axes_draw(cairo_t *cr, viz_rect in, const viz_axis *x, const viz_axis *y, double font,
                   const char *title, int grid)
{
    double ticks[VIZ_MAX_TICKS] = { 0 }, step = 0;
    char lab[VIZ_MAX_TICKS][VIZ_TICK_LABEL];
    double tick = font * 0.4, tfont = font * 0.88;
    cairo_save(cr);
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_SQUARE);

    /* x ticks (target spacing ~7 label widths) */
    int tx = (int)(in.w / (font * 6.5));
    int nx = x->cats ? 0 : viz_axis_ticks(x, tx < 2 ? 2 : tx, ticks, VIZ_MAX_TICKS, &step);
    if (x->cats) cat_ticks(cr, in, x, 1, font, tick);
    viz_axis_tick_labels(x, ticks, nx, step, lab);
    viz_font(cr, tfont, 0);
    for (int i = 0; i < nx; i++) {
        double px = viz_axis_map(x, ticks[i], in.x, in.x + in.w);
        if (grid) {
            viz_set_rgb(cr, VIZ_GRID_RGB);
            cairo_set_line_width(cr, 0.8);
            cairo_move_to(cr, px, in.y);
            cairo_line_to(cr, px, in.y + in.h);
            cairo_stroke(cr);
        }
        viz_set_rgb(cr, VIZ_INK_RGB);
        cairo_set_line_width(cr, 1.0);
        cairo_move_to(cr, px, in.y + in.h);
        cairo_line_to(cr, px, in.y + in.h + tick);
        cairo_stroke(cr);
        viz_text(cr, px, in.y + in.h + tick + 2, lab[i], 0.5, 0, 0);
    }
    /* y ticks (target spacing ~3 font heights) */
    int ty = (int)(in.h / (font * 3.0));
    int ny = y->cats ? 0 : viz_axis_ticks(y, ty < 2 ? 2 : ty, ticks, VIZ_MAX_TICKS, &step);
    if (y->cats) cat_ticks(cr, in, y, 0, font, tick);
    viz_axis_tick_labels(y, ticks, ny, step, lab);
    for (int i = 0; i < ny; i++) {
        double py = viz_axis_map(y, ticks[i], in.y + in.h, in.y);
        if (grid) {
            viz_set_rgb(cr, VIZ_GRID_RGB);
            cairo_set_line_width(cr, 0.8);
            cairo_move_to(cr, in.x, py);
            cairo_line_to(cr, in.x + in.w, py);
            cairo_stroke(cr);
        }
        viz_set_rgb(cr, VIZ_INK_RGB);
        cairo_set_line_width(cr, 1.0);
        cairo_move_to(cr, in.x - tick, py);
        cairo_line_to(cr, in.x, py);
        cairo_stroke(cr);
        viz_text(cr, in.x - tick - 3, py, lab[i], 1, 0.5, 0);
    }
    /* frame */
    viz_set_rgb(cr, VIZ_INK_RGB);
    cairo_set_line_width(cr, 1.0);
    cairo_rectangle(cr, in.x, in.y, in.w, in.h);
    cairo_stroke(cr);
    /* axis titles, beyond the tick labels */
    double xoff = font * 1.5, yoff = font * 4.5;
    if (x->cats) {
        double item = in.w / (x->hi - x->lo), w = cat_max_width(cr, x, font);
        if (w > item * 0.95) xoff = w + font * 0.5;
    }
    if (y->cats) {
        double w = cat_max_width(cr, y, font) + tick + font * 1.4;
        if (w > yoff) yoff = w;
    }
    viz_font(cr, font, 0);
    if (x->label) viz_text(cr, in.x + in.w / 2, in.y + in.h + tick + xoff, x->label, 0.5, 0, 0);
    if (y->label) viz_text(cr, in.x - yoff, in.y + in.h / 2, y->label, 0.5, 0, -M_PI / 2);
    if (title && *title) {
        viz_font(cr, font * 1.1, 1);
        viz_text_fit(cr, in.x + in.w / 2, in.y - font * 0.4, title, in.w + font * 4, 0.5, 1);
    }
    cairo_restore(cr);
}
