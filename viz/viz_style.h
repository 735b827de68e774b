/* viz_style.h — the shared vocabulary of every plot: rectangles, colours,
 * the font, and text placement.
 *
 * All drawing is in user units of 1/96 inch ("px"); viz_surface maps them to
 * device pixels (PNG, scaled by DPI) or points (SVG/PDF), so one drawing path
 * serves every format.  Text uses cairo's toy API with DejaVu Sans.
 */
#ifndef VIZ_STYLE_H
#define VIZ_STYLE_H

#include <cairo.h>

typedef struct {
    double x, y, w, h;
} viz_rect;

typedef struct {
    double r, g, b;
} viz_rgb;

#define VIZ_FONT "DejaVu Sans"

/* Colours of the project's figures.  Writes and reads: by default the
 * Okabe-Ito vermilion and blue (told apart with every common colour-vision
 * deficiency); the paper's appendix figure used red and green (the "paper"
 * palette, VIZ_PAPER_*).  Ink for axes and text. */
static const viz_rgb VIZ_WRITE_RGB = { 0.835, 0.369, 0.0 };   /* #D55E00 */
static const viz_rgb VIZ_READ_RGB = { 0.0, 0.447, 0.698 };    /* #0072B2 */
static const viz_rgb VIZ_PAPER_WRITE_RGB = { 0.84, 0.10, 0.11 };
static const viz_rgb VIZ_PAPER_READ_RGB = { 0.13, 0.62, 0.18 };
static const viz_rgb VIZ_INK_RGB = { 0.12, 0.12, 0.12 };
static const viz_rgb VIZ_GRID_RGB = { 0.88, 0.88, 0.88 };

/* Default text size in px (labels); titles are 1.15x, ticks 0.9x. */
#define VIZ_FONT_SIZE 13.0

static inline viz_rect viz_rect_make(double x, double y, double w, double h)
{
    viz_rect r = { x, y, w, h };
    return r;
}

/* Shrink r by margins (left, top, right, bottom); never below zero size. */
viz_rect viz_rect_inset(viz_rect r, double l, double t, double rt, double b);

/* The i-th cell (row-major) of a rows x cols grid inside r, separated by gap. */
viz_rect viz_rect_grid(viz_rect r, int rows, int cols, int i, double gap);

static inline void viz_set_rgb(cairo_t *cr, viz_rgb c) { cairo_set_source_rgb(cr, c.r, c.g, c.b); }

/* Select the project font at size px (bold when bold != 0). */
void viz_font(cairo_t *cr, double size, int bold);

/* Draw s with its anchor at (x, y): ax = 0 left, 0.5 centre, 1 right;
 * ay = 0 top, 0.5 middle, 1 baseline-ish bottom.  angle in radians
 * (-pi/2 for a label reading upwards).  Uses the current font and source. */
void viz_text(cairo_t *cr, double x, double y, const char *s, double ax, double ay, double angle);

/* Advance width of s in the current font. */
double viz_text_width(cairo_t *cr, const char *s);

/* Draw s shortened with "..." so it fits in max_w (centred at x). */
void viz_text_fit(cairo_t *cr, double x, double y, const char *s, double max_w, double ax, double ay);

#endif
