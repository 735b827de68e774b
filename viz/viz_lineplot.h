/* viz_lineplot.h — x/y line charts of several named series with a legend
 * (the miss-ratio curves and the reuse CDFs are line charts). */
#ifndef VIZ_LINEPLOT_H
#define VIZ_LINEPLOT_H

#include <stddef.h>

#include "rn_error.h"
#include "viz_axes.h"
#include "viz_legend.h"

/* One named series of n points (x ascending). */
typedef struct {
    const char *name;
    size_t n;
    const double *x, *y;
    int thin_of;          /* > 0: drawn as a thin solid line without markers
                           * in the colour of series thin_of - 1 (an exact
                           * curve beside its sampled points); 0: its own look */
    const double *ylo, *yhi; /* optional error bars: a whisker from ylo[j] to
                              * yhi[j] at each point (NULL = none) */
} viz_series;

typedef struct {
    viz_axis x, y;        /* ranges; lo == hi means "fit the data" */
    const char *title;
    double font;          /* label size in px */
    int legend;           /* draw a legend (1) */
    viz_corner corner;    /* where (VIZ_BOTTOM_RIGHT) */
    int markers;          /* dots on the points (1 when few points) */
    int steps;            /* draw as a staircase (for CDFs) */
    int looks;            /* series i also gets dash pattern and marker i + 1
                           * (viz_legend.h), so series tell apart without colour */
} viz_lineplot_style;

void viz_lineplot_style_default(viz_lineplot_style *st);

/* Fit unset axis ranges (lo == hi) to the data, padded to nice numbers;
 * log axes fit the positive values only. */
void viz_lineplot_fit(const viz_series *s, int n, viz_axis *x, viz_axis *y);

/* Plot area for r. */
viz_rect viz_lineplot_area(viz_rect r, const viz_lineplot_style *st);

/* Draw the chart; series i gets palette colour i.  RN_EINPUT when there is
 * nothing to draw.  When xa is not NULL it receives the fitted x axis and
 * area the plot area (for a second axis drawn by the caller). */
int viz_lineplot_draw(cairo_t *cr, viz_rect r, const viz_series *s, int n,
                      const viz_lineplot_style *st, rn_error *err);
int viz_lineplot_draw_ex(cairo_t *cr, viz_rect r, const viz_series *s, int n, const viz_lineplot_style *st,
                         viz_axis *xa, viz_rect *area, rn_error *err);

#endif
