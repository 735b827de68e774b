/* viz_colormap.h — colour maps for continuous values and a categorical
 * palette for series.
 *
 * viridis is the default: perceptually uniform, readable in greyscale and by
 * colour-blind viewers.  "greys" (white to black) suits print; "magma-like"
 * maps are left out on purpose — one good map is enough.
 */
#ifndef VIZ_COLORMAP_H
#define VIZ_COLORMAP_H

#include <stdint.h>

#include "viz_style.h"

typedef enum { VIZ_CMAP_VIRIDIS = 0, VIZ_CMAP_GREYS = 1, VIZ_CMAP_BLUES = 2 } viz_cmap;

/* Look a map up by name ("viridis", "greys", "blues"); -1 if unknown. */
int viz_cmap_from_name(const char *name);
const char *viz_cmap_name(viz_cmap m);

/* Colour at t in [0, 1] (clamped; NaN maps to 0). */
viz_rgb viz_cmap_rgb(viz_cmap m, double t);

/* Same as an opaque cairo ARGB32 pixel (0xffRRGGBB). */
uint32_t viz_cmap_argb(viz_cmap m, double t);

/* The i-th colour of a 10-colour categorical palette (cycles). */
viz_rgb viz_palette(int i);

#endif
