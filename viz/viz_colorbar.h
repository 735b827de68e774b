/* viz_colorbar.h — a vertical colour bar with a labelled scale. */
#ifndef VIZ_COLORBAR_H
#define VIZ_COLORBAR_H

#include "viz_axes.h"
#include "viz_colormap.h"

/* Width to reserve right of a plot for a colour bar and its labels. */
double viz_colorbar_width(double font);

/* Draw the bar filling `bar` (colour at the bottom = scale->lo) with ticks
 * and labels on its right and scale->label written upwards beyond them.
 * A log scale maps colour linearly in log10. */
void viz_colorbar_draw(cairo_t *cr, viz_rect bar, viz_cmap cmap, const viz_axis *scale, double font);

#endif
