/* viz_axes.h — data-to-page mapping, tick placement and axis drawing.
 *
 * Linear ticks come from the "nice numbers" algorithm (Heckbert, Graphics
 * Gems 1990): steps of 1, 2 or 5 times a power of ten, about `target` of
 * them.  Log axes put ticks at powers of ten (adding 2 and 5 multiples when
 * the range spans fewer than 2.5 decades, and 3 and 7 ones, or all, where
 * that still gives fewer than four ticks).  The labels of one axis share one
 * format (viz_axis_tick_labels).
 */
#ifndef VIZ_AXES_H
#define VIZ_AXES_H

#include <stddef.h>

#include "viz_style.h"

typedef struct {
    double lo, hi;       /* data range shown (lo < hi; log axes need lo > 0) */
    int log;             /* 1: logarithmic (base 10) */
    int integer;         /* 1: ticks only at whole numbers (slots, positions) */
    const char *label;   /* axis title, NULL for none */
    /* Categorical axis: when cats is set, item i spans [i, i+1) and its
     * label cats[i] is written at i + 0.5 (thinned so labels do not
     * overlap; x labels turn vertical when they are wider than an item). */
    const char *const *cats;
    int n_cats;
} viz_axis;

#define VIZ_MAX_TICKS 64

/* A numeric axis (no categories). */
static inline viz_axis viz_axis_make(double lo, double hi, int log, int integer, const char *label)
{
    viz_axis a = { lo, hi, log, integer, label, NULL, 0 };
    return a;
}

/* A "nice" number near x (rounded to 1, 2, 5 or 10 times a power of ten
 * when round is set, else the smallest such number >= x). */
double viz_nice_num(double x, int round);

/* Tick positions for the axis (within [lo, hi]); returns their count and
 * stores the linear step in *step (0 for log axes). */
int viz_axis_ticks(const viz_axis *ax, int target, double *ticks, int max, double *step);

/* Format tick value v (step as returned above): "0.25", "1000", "1e+06". */
void viz_tick_label(double v, double step, int log, char *buf, size_t cap);

#define VIZ_TICK_LABEL 32

/* The labels of an axis's n ticks, in one format for the whole axis: a log
 * axis whose ticks all lie in [0.001, 1e5) gets plain numbers ("300",
 * "1000", "0.01"), any other log axis mantissa-exponent labels for every
 * tick ("1e3", "2e4", "1e6": never "10000" beside "1e+06"); a linear axis
 * viz_tick_label's. */
void viz_axis_tick_labels(const viz_axis *ax, const double *ticks, int n, double step,
                          char (*labels)[VIZ_TICK_LABEL]);

/* Page coordinate of v on an axis spanning page interval [a, b]. */
double viz_axis_map(const viz_axis *ax, double v, double a, double b);

/* Margins to leave around a plot area so tick labels and axis titles fit
 * (font = label size in px; title = whether a title line goes on top). */
void viz_axes_margins(double font, int title, double *left, double *top, double *right,
                      double *bottom);

/* The plot area of a panel: r less viz_axes_margins. */
viz_rect viz_axes_inner(viz_rect r, double font, int title);

/* Extra room a categorical axis needs beyond viz_axes_margins (vertical x
 * labels are as tall as the longest label). */
double viz_axis_cat_extent(cairo_t *cr, const viz_axis *ax, double font);

/* Draw frame, ticks, tick labels and axis titles around inner (the plot
 * area), optional light grid lines, and a title centred above. */
void viz_axes_draw(cairo_t *cr, viz_rect inner, const viz_axis *x, const viz_axis *y, double font,
                   const char *title, int grid);

#endif
