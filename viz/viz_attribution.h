/* viz_attribution.h — a head's token x token matrix (how much each earlier
 * token's writes feed each later token's reads) with token labels on both
 * axes and a colour bar; optionally the future (a column after its row:
 * a token cannot read what is written later) masked in grey, and a log
 * colour scale. */
#ifndef VIZ_ATTRIBUTION_H
#define VIZ_ATTRIBUTION_H

#include "rn_error.h"
#include "viz_colormap.h"
#include "viz_style.h"

typedef struct {
    int rows, cols;              /* rows: reading token, cols: writing token */
    const double *v;             /* rows x cols, v[row * cols + col] */
    const char *const *row_labels, *const *col_labels; /* may be NULL: indices */
    char title[160];
    const char *value_label;     /* colour-bar title ("attribution") */
    const char *x_label, *y_label; /* axis titles; NULL: "written by token", "read by token" */
    int mask_future;             /* square matrix, row i and column i the same
                                  * token: cells with column > row are grey */
    int log;                     /* log10 colour scale over the positive values */
} viz_matrix_data;

/* Grey of masked cells. */
static const viz_rgb VIZ_MASK_RGB = { 0.80, 0.80, 0.80 };
/* Cells of exactly 0 on a log scale (no value to take a colour from): white,
 * keyed "0 (none)" under the colour bar. */
static const viz_rgb VIZ_ZERO_RGB = { 1.0, 1.0, 1.0 };

/* Plot area for the matrix drawn in r (depends on label widths). */
viz_rect viz_matrix_area(cairo_t *cr, viz_rect r, const viz_matrix_data *d, double font);

/* Draw; row 0 at the top (reading order).  Values map linearly from
 * min(0, min v) to max v; with a diverging cmap (viz_cmap_diverging) from
 * -max|v| to max|v|, so 0 takes the map's middle colour; with log, in
 * log10 from the smallest positive value (at least max v / 10^4) to max v,
 * smaller positive values taking the bottom colour and values <= 0 (no
 * attribution at all) VIZ_ZERO_RGB, keyed under the colour bar.
 * RN_EINPUT when empty. */
int viz_matrix_draw(cairo_t *cr, viz_rect r, const viz_matrix_data *d, viz_cmap cmap, double font,
                    rn_error *err);

#endif
