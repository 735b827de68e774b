/* viz_attribution.h — a head's token x token matrix (how much each earlier
 * token's writes feed each later token's reads) with token labels on both
 * axes and a colour bar. */
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
} viz_matrix_data;

/* Plot area for the matrix drawn in r (depends on label widths). */
viz_rect viz_matrix_area(cairo_t *cr, viz_rect r, const viz_matrix_data *d, double font);

/* Draw; row 0 at the top (reading order).  Values map linearly from
 * min(0, min v) to max v.  RN_EINPUT when empty. */
int viz_matrix_draw(cairo_t *cr, viz_rect r, const viz_matrix_data *d, viz_cmap cmap, double font,
                    rn_error *err);

#endif
