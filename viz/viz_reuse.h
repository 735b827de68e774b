/* viz_reuse.h — reuse-time and stack-distance distributions: for each
 * histogram a row of two panels, the fraction of accesses per bin (bars)
 * and the cumulative fraction (a staircase CDF).
 *
 * Bins are arbitrary integer ranges [lo, hi] (the analysis module uses
 * log2 bins: 0, 1, 2-3, 4-7, ...); the x axis has one bin per unit and a
 * tick on each bin's left edge labelled with its lower bound (labels thinned
 * so they do not touch; every label has its tick).  The y axes are
 * fractions of the reused accesses.  First accesses ("cold") have no reuse;
 * they are left out of the fractions (the caller reports them once, e.g.
 * in the page title: viz_reuse_summary).
 */
#ifndef VIZ_REUSE_H
#define VIZ_REUSE_H

#include "rn_error.h"
#include "viz_style.h"

typedef struct {
    const char *name;        /* "reuse time (tokens)", "stack distance (slots)" */
    int n_bins;
    const double *lo, *hi;   /* [n_bins] inclusive bounds */
    const double *count;     /* [n_bins] */
    double cold;             /* accesses without a previous one */
} viz_hist_data;

/* Draw n histograms as n rows of (histogram, CDF) panels.  cells, when not
 * NULL, receives 2n panel rectangles (row-major).  RN_EINPUT when empty. */
int viz_reuse_draw(cairo_t *cr, viz_rect r, const viz_hist_data *h, int n, double font,
                   viz_rect *cells, rn_error *err);

/* Plot area of a panel rectangle produced above. */
viz_rect viz_reuse_area(viz_rect cell, double font);

/* "258373 reused accesses, 1.5% cold" for h (cold share of all accesses). */
void viz_reuse_summary(const viz_hist_data *h, char *buf, size_t cap);

/* Page x of bin edge b (0..n_bins) inside a panel's plot area. */
double viz_reuse_edge_x(viz_rect area, int n_bins, int b);

#endif
