/* viz_raster.c — ARGB32 panel buffers painted with nearest filtering
 * (viz_raster.h). */
#include "viz_raster.h"

#include <math.h>
#include <stdlib.h>

int viz_raster_init(viz_raster *r, int w, int h, uint32_t argb, rn_error *err)
{
    r->px = NULL;
    if (w < 1) w = 1;
    if (h < 1) h = 1;
    r->w = w;
    r->h = h;
    r->stride = cairo_format_stride_for_width(CAIRO_FORMAT_ARGB32, w) / 4;
    r->px = malloc((size_t)r->stride * h * 4);
    if (!r->px) return rn_seterr(err, RN_ENOMEM, "out of memory for a %dx%d raster", w, h);
    for (size_t i = 0; i < (size_t)r->stride * h; i++) r->px[i] = argb;
    return RN_OK;
}

void viz_raster_free(viz_raster *r)
{
    free(r->px);
    r->px = NULL;
}

void viz_raster_paint(cairo_t *cr, const viz_raster *r, viz_rect rect)
{
    if (rect.w <= 0 || rect.h <= 0) return;
    cairo_surface_t *img = cairo_image_surface_create_for_data(
        (unsigned char *)r->px, CAIRO_FORMAT_ARGB32, r->w, r->h, r->stride * 4);
    cairo_save(cr);
    cairo_rectangle(cr, rect.x, rect.y, rect.w, rect.h);
    cairo_clip(cr);
    cairo_translate(cr, rect.x, rect.y);
    cairo_scale(cr, rect.w / r->w, rect.h / r->h);
    cairo_set_source_surface(cr, img, 0, 0);
    cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST);
    cairo_pattern_set_extend(cairo_get_source(cr), CAIRO_EXTEND_PAD);
    cairo_paint(cr);
    cairo_restore(cr);
    cairo_surface_destroy(img);
}

int viz_raster_dim(cairo_t *cr, int64_t n, double extent, int horizontal)
{
    double dx = horizontal ? extent : 0, dy = horizontal ? 0 : extent;
    cairo_user_to_device_distance(cr, &dx, &dy);
    double dev = sqrt(dx * dx + dy * dy);
    if (cairo_surface_get_type(cairo_get_target(cr)) != CAIRO_SURFACE_TYPE_IMAGE) dev *= 3;
    int64_t d = (int64_t)ceil(dev);
    if (d < 1) d = 1;
    if (n < d) d = n;
    if (d > 8192) d = 8192;
    return (int)(d < 1 ? 1 : d);
}
