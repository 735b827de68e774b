/* viz_style.c — rectangles, font selection and anchored text (viz_style.h). */
#include "viz_style.h"

#include <stdio.h>
#include <string.h>

viz_rect viz_rect_inset(viz_rect r, double l, double t, double rt, double b)
{
    viz_rect o = { r.x + l, r.y + t, r.w - l - rt, r.h - t - b };
    if (o.w < 0) o.w = 0;
    if (o.h < 0) o.h = 0;
    return o;
}

viz_rect viz_rect_grid(viz_rect r, int rows, int cols, int i, double gap)
{
    if (rows < 1) rows = 1;
    if (cols < 1) cols = 1;
    double cw = (r.w - gap * (cols - 1)) / cols, ch = (r.h - gap * (rows - 1)) / rows;
    if (cw < 0) cw = 0;
    if (ch < 0) ch = 0;
    int row = i / cols, col = i % cols;
    return viz_rect_make(r.x + col * (cw + gap), r.y + row * (ch + gap), cw, ch);
}

void viz_font(cairo_t *cr, double size, int bold)
{
    cairo_select_font_face(cr, VIZ_FONT, CAIRO_FONT_SLANT_NORMAL,
                           bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
}

double viz_text_width(cairo_t *cr, const char *s)
{
    cairo_text_extents_t te;
    cairo_text_extents(cr, s, &te);
    return te.x_advance;
}

/* Anchoring uses the font's ascent/descent rather than the glyphs' ink
 * extents, so labels such as "10" and "gy" share one baseline. */
void viz_text(cairo_t *cr, double x, double y, const char *s, double ax, double ay, double angle)
{
    if (!s || !*s) return;
    cairo_font_extents_t fe;
    cairo_font_extents(cr, &fe);
    double w = viz_text_width(cr, s), h = fe.ascent + fe.descent;
    cairo_save(cr);
    cairo_translate(cr, x, y);
    cairo_rotate(cr, angle);
    cairo_move_to(cr, -ax * w, -ay * h + fe.ascent);
    cairo_show_text(cr, s);
    cairo_new_path(cr);
    cairo_restore(cr);
}

void viz_text_fit(cairo_t *cr, double x, double y, const char *s, double max_w, double ax, double ay)
{
    if (!s) return;
    if (viz_text_width(cr, s) <= max_w) {
        viz_text(cr, x, y, s, ax, ay, 0);
        return;
    }
    char buf[256];
    size_t n = strlen(s);
    if (n > sizeof buf - 4) n = sizeof buf - 4;
    while (n > 0) {
        /* never cut inside a UTF-8 sequence (cairo refuses invalid text) */
        while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80) n--;
        snprintf(buf, sizeof buf, "%.*s...", (int)n, s);
        if (viz_text_width(cr, buf) <= max_w) break;
        n--;
    }
    if (n > 0) viz_text(cr, x, y, buf, ax, ay, 0);
}
