/* viz_mrc.h — hit ratio against cache capacity for several policies (one
 * line each), optionally on a log-scale capacity axis. */
#ifndef VIZ_MRC_H
#define VIZ_MRC_H

#include "viz_lineplot.h"

typedef struct {
    int n;                     /* policies */
    const viz_series *curves;  /* x = capacity (slots), y = hit ratio in [0, 1] */
    char title[160];
    int log_x;                 /* capacity axis in log10 */
} viz_mrc_data;

/* Plot area (for tests). */
viz_rect viz_mrc_area(viz_rect r, const viz_mrc_data *d, double font);

int viz_mrc_draw(cairo_t *cr, viz_rect r, const viz_mrc_data *d, double font, rn_error *err);

#endif
