/* viz_surface.h — an output file to draw into: PNG, SVG or PDF chosen by the
 * path's extension, written all-or-nothing.
 *
 * The caller draws into t->cr in px units (1/96 inch) over a width x height
 * page; PNG pages are rasterised at `dpi` (96 = one pixel per px), vector
 * pages are sized in points.  Output goes to a temp file beside the target
 * (core/base/rn_atomic.h) and is renamed over it only by viz_surface_commit, so a
 * failed or interrupted plot never leaves a partial file.
 */
#ifndef VIZ_SURFACE_H
#define VIZ_SURFACE_H

#include <cairo.h>

#include "rn_atomic.h"
#include "rn_error.h"

typedef enum { VIZ_PNG = 0, VIZ_SVG = 1, VIZ_PDF = 2 } viz_format;

typedef struct {
    viz_format fmt;
    cairo_surface_t *surf;
    cairo_t *cr;
    double width, height;  /* page size in px */
    rn_atomic_file af;     /* the temp file being written */
    int open;
} viz_surface;

/* Format from the extension (.png/.svg/.pdf, case-insensitive); RN_EINPUT
 * naming the path otherwise. */
int viz_format_from_path(const char *path, viz_format *fmt, rn_error *err);

/* Create the temp output and a drawing context with a white background.
 * RN_EINPUT for an unknown extension, an unwritable path, or a size/DPI out
 * of range (the PNG may be at most 20000 pixels a side). */
int viz_surface_open(viz_surface *s, const char *path, double width, double height, double dpi,
                     rn_error *err);

/* Finish drawing, write and rename over the target.  On any failure the
 * temp file is removed and the target untouched.  Frees everything. */
int viz_surface_commit(viz_surface *s, rn_error *err);

/* Drop the output (temp file removed) and free everything. */
void viz_surface_abort(viz_surface *s);

#endif
