/* viz_surface.c — PNG/SVG/PDF output targets written atomically
 * (viz_surface.h).  Vector surfaces stream into the rn_atomic temp file as
 * cairo produces them; PNG is encoded into it at commit. */
#include "viz_surface.h"

#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

int viz_format_from_path(const char *path, viz_format *fmt, rn_error *err)
{
    const char *dot = path ? strrchr(path, '.') : NULL;
    const char *slash = path ? strrchr(path, '/') : NULL;
    if (dot && (!slash || dot > slash)) {
        if (!strcasecmp(dot, ".png")) { *fmt = VIZ_PNG; return RN_OK; }
        if (!strcasecmp(dot, ".svg")) { *fmt = VIZ_SVG; return RN_OK; }
        if (!strcasecmp(dot, ".pdf")) { *fmt = VIZ_PDF; return RN_OK; }
    }
    return rn_seterr(err, RN_EINPUT, "%s: unknown output format (use .png, .svg or .pdf)",
                     path && *path ? path : "(empty path)");
}

static cairo_status_t write_stream(void *closure, const unsigned char *data, unsigned int len)
{
    FILE *f = closure;
    return fwrite(data, 1, len, f) == len ? CAIRO_STATUS_SUCCESS : CAIRO_STATUS_WRITE_ERROR;
}

int viz_surface_open(viz_surface *s, const char *path, double width, double height, double dpi,
                     rn_error *err)
{
    memset(s, 0, sizeof *s);
    int rc = viz_format_from_path(path, &s->fmt, err);
    if (rc) return rc;
    if (!(width >= 16 && width <= 20000 && height >= 16 && height <= 20000))
        return rn_seterr(err, RN_EINPUT, "%s: page size %gx%g px is out of range [16, 20000]", path,
                         width, height);
    if (!(dpi >= 10 && dpi <= 1200))
        return rn_seterr(err, RN_EINPUT, "%s: DPI %g is out of range [10, 1200]", path, dpi);
    double scale = s->fmt == VIZ_PNG ? dpi / 96.0 : 72.0 / 96.0;
    if (s->fmt == VIZ_PNG && (width * scale > 20000 || height * scale > 20000))
        return rn_seterr(err, RN_EINPUT, "%s: %gx%g px at %g DPI exceeds 20000 pixels a side", path,
                         width, height, dpi);
    rc = rn_atomic_open(&s->af, path, err);
    if (rc) return rc;
    s->width = width;
    s->height = height;
    switch (s->fmt) {
    case VIZ_PNG:
        s->surf = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, (int)(width * scale + 0.5),
                                             (int)(height * scale + 0.5));
        break;
    case VIZ_SVG:
        s->surf = cairo_svg_surface_create_for_stream(write_stream, s->af.f, width * scale,
                                                      height * scale);
        break;
    case VIZ_PDF:
        s->surf = cairo_pdf_surface_create_for_stream(write_stream, s->af.f, width * scale,
                                                      height * scale);
        break;
    }
    if (cairo_surface_status(s->surf) != CAIRO_STATUS_SUCCESS) {
        rn_seterr(err, RN_ENOMEM, "%s: cannot create a %gx%g drawing surface: %s", path, width,
                  height, cairo_status_to_string(cairo_surface_status(s->surf)));
        cairo_surface_destroy(s->surf);
        s->surf = NULL;
        rn_atomic_abort(&s->af);
        return err ? err->code : RN_ENOMEM;
    }
    s->cr = cairo_create(s->surf);
    cairo_scale(s->cr, scale, scale);
    cairo_set_source_rgb(s->cr, 1, 1, 1);
    cairo_paint(s->cr);
    s->open = 1;
    return RN_OK;
}

int viz_surface_commit(viz_surface *s, rn_error *err)
{
    if (!s->open) return rn_seterr(err, RN_EINTERNAL, "plot output is not open");
    cairo_status_t st = cairo_status(s->cr);
    cairo_destroy(s->cr);
    s->cr = NULL;
    if (st == CAIRO_STATUS_SUCCESS) {
        if (s->fmt == VIZ_PNG) {
            cairo_surface_flush(s->surf);
            st = cairo_surface_write_to_png_stream(s->surf, write_stream, s->af.f);
        } else {
            cairo_surface_finish(s->surf);
            st = cairo_surface_status(s->surf);
        }
    }
    cairo_surface_destroy(s->surf);
    s->surf = NULL;
    s->open = 0;
    if (st != CAIRO_STATUS_SUCCESS) {
        rn_atomic_abort(&s->af);
        return rn_seterr(err, st == CAIRO_STATUS_WRITE_ERROR ? RN_EIO : RN_EINTERNAL,
                         "%s: cannot write plot: %s", s->af.path, cairo_status_to_string(st));
    }
    return rn_atomic_commit(&s->af, err);
}

void viz_surface_abort(viz_surface *s)
{
    if (!s->open) return;
    cairo_destroy(s->cr);
    /* finishing a vector surface would write into the temp file; it is
     * removed right after, so just drop it */
    cairo_surface_destroy(s->surf);
    s->cr = NULL;
    s->surf = NULL;
    s->open = 0;
    rn_atomic_abort(&s->af);
}
