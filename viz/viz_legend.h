/* viz_legend.h — a boxed legend of coloured lines or swatches. */
#ifndef VIZ_LEGEND_H
#define VIZ_LEGEND_H

#include "viz_style.h"

typedef enum { VIZ_LEGEND_LINE = 0, VIZ_LEGEND_BOX = 1 } viz_legend_kind;

typedef struct {
    const char *label;
    viz_rgb color;
    viz_legend_kind kind;
} viz_legend_entry;

/* Where in the plot area the legend sits. */
typedef enum {
    VIZ_TOP_RIGHT = 0, VIZ_TOP_LEFT, VIZ_BOTTOM_RIGHT, VIZ_BOTTOM_LEFT, VIZ_ABOVE
} viz_corner;

/* Draw n entries inside area at corner (VIZ_ABOVE: one row centred just
 * above area); returns the legend's box. */
viz_rect viz_legend_draw(cairo_t *cr, viz_rect area, const viz_legend_entry *e, int n,
                         viz_corner corner, double font);

#endif
