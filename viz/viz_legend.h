/* viz_legend.h — a boxed legend of coloured lines or swatches. */
#ifndef VIZ_LEGEND_H
#define VIZ_LEGEND_H

#include "viz_style.h"

typedef enum { VIZ_LEGEND_LINE = 0, VIZ_LEGEND_BOX = 1 } viz_legend_kind;

typedef struct {
    const char *label;
    viz_rgb color;
    viz_legend_kind kind;
    int look;        /* lines: dash pattern and marker (viz_look_apply /
                      * viz_look_marker); 0 = solid, no marker */
    double width;    /* lines: stroke width (0 = 2.2) */
} viz_legend_entry;

/* Line looks that tell series apart without colour: look k >= 1 sets dash
 * pattern (k - 1) % 5 (solid, dashed, dotted, dash-dot, long dash) and
 * marker (k - 1) % 5 (circle, square, triangle, diamond, cross); 0 is a
 * plain solid line.  viz_look_apply sets the dash on cr; viz_look_marker
 * draws (and fills or strokes) the marker of radius rad at (x, y). */
void viz_look_apply(cairo_t *cr, int look);
void viz_look_marker(cairo_t *cr, int look, double x, double y, double rad);

/* Where in the plot area the legend sits. */
typedef enum {
    VIZ_TOP_RIGHT = 0, VIZ_TOP_LEFT, VIZ_BOTTOM_RIGHT, VIZ_BOTTOM_LEFT, VIZ_ABOVE
} viz_corner;

/* Draw n entries inside area at corner (VIZ_ABOVE: one row centred just
 * above area); returns the legend's box. */
viz_rect viz_legend_draw(cairo_t *cr, viz_rect area, const viz_legend_entry *e, int n,
                         viz_corner corner, double font);

#endif
