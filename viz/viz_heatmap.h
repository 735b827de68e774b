/* viz_heatmap.h — access-count heatmaps: one head's slot x time-bucket
 * counts with a colour bar, and the model view, a layers x heads grid of
 * thumbnails sharing one colour scale.
 *
 * Cells with a zero count are left white so untouched memory stands apart
 * from rarely touched memory (a white box under the colour bar says so);
 * other counts map through the colour map from the smallest drawn count
 * (the bar's bottom colour) to the largest, linearly or in log10 with
 * `log`; the bar's ticks are whole counts.  Axis titles give the bin size
 * (tokens per bucket, slots per bin); ranges are written inclusive, 0–1023.
 */
#ifndef VIZ_HEATMAP_H
#define VIZ_HEATMAP_H

#include "rn_error.h"
#include "viz_colormap.h"
#include "viz_trace.h"

typedef struct {
    int rows, cols;        /* rows: slot bins (row 0 = lowest slots); cols: time buckets */
    const float *v;        /* rows x cols counts, v[row * cols + col] */
    double x_lo, x_hi;     /* positions covered */
    double y_lo, y_hi;     /* slots covered */
    char title[160];       /* panel title (grid: a small tag in the corner) */
} viz_heatmap_data;

typedef struct {
    double font;           /* label size in px */
    viz_cmap cmap;         /* VIZ_CMAP_VIRIDIS */
    int log;               /* log10 colour scale */
    double vmax;           /* top of the scale; 0 = the data's maximum */
    double vmin;           /* bottom of the scale; 0 = the data's smallest non-zero value */
    const char *slot_label; /* y-axis name ("slot (after CAPE)") */
    const char *value_label; /* colour-bar title ("accesses") */
    const int *layer_ids;  /* grid: layer number of each row; NULL = 0, 1, ... */
    const int *head_ids;   /* grid: head number of each column; NULL = 0, 1, ... */
} viz_heatmap_style;

void viz_heatmap_style_default(viz_heatmap_style *st);

/* Count the events of ops (an RN_OPS_* set) with pos in [pos_lo, pos_hi) and slot
 * in [0, n_slots) into out (rows x cols, zeroed here): column = time
 * bucket, row = slot bin, both of equal width. */
void viz_heatmap_bin(const viz_access *ev, size_t n, int ops, int64_t pos_lo, int64_t pos_hi,
                     int64_t n_slots, int rows, int cols, float *out);

/* The whole number of positions (or slots) per bin that covers span in at
 * most max_bins bins: ceil(span / max_bins), at least 1.  The figures'
 * default: a fractional width (456 positions in 256 buckets, 1.78 each)
 * gives alternate buckets 1 and 2 positions, striping a uniform stream. */
int64_t viz_heatmap_bin_width(int64_t span, int max_bins);

/* Largest value of d (0 when empty). */
double viz_heatmap_max(const viz_heatmap_data *d);

/* Smallest non-zero value of d (0 when all are zero). */
double viz_heatmap_min(const viz_heatmap_data *d);

/* The colour-map position of value v on a scale [vmin, vmax] (< 0: v is
 * zero, left white); vmin maps to 0. */
double viz_heatmap_scale(double v, double vmin, double vmax, int log);

/* Plot area of a single heatmap drawn in r (colour bar to its right). */
viz_rect viz_heatmap_area(viz_rect r, const viz_heatmap_data *d, const viz_heatmap_style *st);

/* One head: axes, cells, colour bar. */
int viz_heatmap_draw(cairo_t *cr, viz_rect r, const viz_heatmap_data *d, const viz_heatmap_style *st,
                     rn_error *err);

/* Model view: n_layers x n_heads thumbnails (d[layer * n_heads + head]),
 * "head h" over columns, "layer l" beside rows, one colour bar for all;
 * every thumbnail has tick marks, numbered under the bottom row (positions)
 * and beside the first column (slots); d[0] gives the ranges of all.
 * thumbs, when not NULL, receives each thumbnail's cell rectangle. */
int viz_heatmap_grid_draw(cairo_t *cr, viz_rect r, const viz_heatmap_data *d, int n_layers,
                          int n_heads, const viz_heatmap_style *st, viz_rect *thumbs, rn_error *err);

#endif
