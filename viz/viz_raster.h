/* viz_raster.h — a pixel buffer for dense panels.
 *
 * Drawing thousands of cells as cairo rectangles is slow and bloats SVG/PDF.
 * Dense panels (traces, heatmaps, matrices) are rasterised into an ARGB32
 * buffer of about the panel's device resolution and painted scaled with
 * nearest-neighbour filtering; axes and text stay vectors.
 */
#ifndef VIZ_RASTER_H
#define VIZ_RASTER_H

#include <stdint.h>

#include "rn_error.h"
#include "viz_style.h"

typedef struct {
    int w, h;
    int stride;       /* in pixels */
    uint32_t *px;     /* premultiplied ARGB32, row 0 at the top */
} viz_raster;

/* Allocate w x h pixels filled with argb.  RN_ENOMEM on failure. */
int viz_raster_init(viz_raster *r, int w, int h, uint32_t argb, rn_error *err);
void viz_raster_free(viz_raster *r);

/* Paint the raster stretched over rect (nearest-neighbour). */
void viz_raster_paint(cairo_t *cr, const viz_raster *r, viz_rect rect);

/* A good raster size for n data cells spanning `extent` px of the page:
 * one pixel per cell when cells are at least a device pixel wide, else one
 * per device pixel (vector outputs get 3 pixels per point). */
int viz_raster_dim(cairo_t *cr, int64_t n, double extent, int horizontal);

#endif
