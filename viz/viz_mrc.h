/* viz_mrc.h — hit ratio against cache capacity for several policies (one
 * line each, told apart by colour, dash and marker), optionally on a
 * log-scale capacity axis, with a second capacity axis on top in bytes and
 * as a share of the state the cache could hold. */
#ifndef VIZ_MRC_H
#define VIZ_MRC_H

#include "viz_lineplot.h"

typedef struct {
    int n;                     /* series */
    const viz_series *curves;  /* x = capacity (slots), y = hit ratio in [0, 1] */
    char title[160];
    int log_x;                 /* capacity axis in log10 */
    const char *cap_label;     /* capacity axis title (NULL: "cache capacity (slots)") */
    double bytes_per_slot;     /* > 0 with total_slots: the top axis */
    double total_slots;        /* slots of the state one cache serves (its share's 100%) */
} viz_mrc_data;

/* Plot area (for tests). */
viz_rect viz_mrc_area(viz_rect r, const viz_mrc_data *d, double font);

int viz_mrc_draw(cairo_t *cr, viz_rect r, const viz_mrc_data *d, double font, rn_error *err);

/* "512 B", "3 KiB", "1.5 MiB": bytes in binary units. */
void viz_bytes_text(double bytes, char *buf, size_t cap);

#endif
