/* viz_colormap.h — colour maps for continuous values and a categorical
 * palette for series.
 *
 * viridis is the default: perceptually uniform, readable in greyscale and by
 * colour-blind viewers.  "greys" (white to black) suits print; "magma-like"
 * maps are left out on purpose — one good map is enough.  "rdbu" is the
 * one diverging map, for signed quantities (a patching sweep's recovered
 * fraction): ColorBrewer's RdBu, red at the low end, white in the middle,
 * blue at the high end, as TransformerLens notebooks draw patching results;
 * a plot using it puts 0 in the middle (symmetric limits ±max|v|).  It is
 * not offered to --cmap (the counts plot kinds draw are never negative).
 */
#ifndef VIZ_COLORMAP_H
#define VIZ_COLORMAP_H

#include <stdint.h>

#include "viz_style.h"

typedef enum { VIZ_CMAP_VIRIDIS = 0, VIZ_CMAP_GREYS = 1, VIZ_CMAP_BLUES = 2, VIZ_CMAP_RDBU = 3 } viz_cmap;

/* Look a map up by name ("viridis", "greys", "blues"); -1 if unknown. */
int viz_cmap_from_name(const char *name);
const char *viz_cmap_name(viz_cmap m);

/* Is m diverging (its middle colour, t = 0.5, stands for 0)? */
int viz_cmap_diverging(viz_cmap m);

/* Colour at t in [0, 1] (clamped; NaN maps to 0). */
viz_rgb viz_cmap_rgb(viz_cmap m, double t);

/* Same as an opaque cairo ARGB32 pixel (0xffRRGGBB). */
uint32_t viz_cmap_argb(viz_cmap m, double t);

/* The i-th colour of a 10-colour categorical palette (cycles). */
viz_rgb viz_palette(int i);

#endif
