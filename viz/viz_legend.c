/* viz_legend.c — legend boxes (viz_legend.h). */
#include "viz_legend.h"

static void swatch(cairo_t *cr, const viz_legend_entry *e, double x, double y, double sw, double font)
{
    viz_set_rgb(cr, e->color);
    if (e->kind == VIZ_LEGEND_BOX) {
        cairo_rectangle(cr, x, y - font * 0.35, sw, font * 0.7);
        cairo_fill(cr);
    } else {
        cairo_set_line_width(cr, 2.2);
        cairo_move_to(cr, x, y);
        cairo_line_to(cr, x + sw, y);
        cairo_stroke(cr);
    }
}

viz_rect viz_legend_draw(cairo_t *cr, viz_rect area, const viz_legend_entry *e, int n,
                         viz_corner corner, double font)
{
    viz_rect box = { 0, 0, 0, 0 };
    if (n <= 0) return box;
    cairo_save(cr);
    viz_font(cr, font * 0.9, 0);
    double sw = font * 1.6, pad = font * 0.5, line = font * 1.3, maxw = 0, roww = 0;
    for (int i = 0; i < n; i++) {
        double w = viz_text_width(cr, e[i].label ? e[i].label : "");
        if (w > maxw) maxw = w;
        roww += sw + pad * 0.6 + w + pad * 1.5;
    }
    if (corner == VIZ_ABOVE) {
        box.w = roww;
        box.h = line;
        box.x = area.x + (area.w - box.w) / 2;
        box.y = area.y - line - font * 0.2;
        double x = box.x;
        for (int i = 0; i < n; i++) {
            swatch(cr, &e[i], x, box.y + line / 2, sw, font);
            viz_set_rgb(cr, VIZ_INK_RGB);
            viz_text(cr, x + sw + pad * 0.6, box.y + line / 2, e[i].label, 0, 0.5, 0);
            x += sw + pad * 0.6 + viz_text_width(cr, e[i].label ? e[i].label : "") + pad * 1.5;
        }
        cairo_restore(cr);
        return box;
    }
    box.w = pad * 2 + sw + pad * 0.6 + maxw;
    box.h = pad * 2 + line * n - (line - font);
    double m = font * 0.6;
    box.x = (corner == VIZ_TOP_LEFT || corner == VIZ_BOTTOM_LEFT) ? area.x + m : area.x + area.w - m - box.w;
    box.y = (corner == VIZ_TOP_LEFT || corner == VIZ_TOP_RIGHT) ? area.y + m : area.y + area.h - m - box.h;
    cairo_rectangle(cr, box.x, box.y, box.w, box.h);
    cairo_set_source_rgba(cr, 1, 1, 1, 0.9);
    cairo_fill_preserve(cr);
    cairo_set_source_rgb(cr, 0.7, 0.7, 0.7);
    cairo_set_line_width(cr, 0.8);
    cairo_stroke(cr);
    for (int i = 0; i < n; i++) {
        double y = box.y + pad + font / 2 + i * line;
        swatch(cr, &e[i], box.x + pad, y, sw, font);
        viz_set_rgb(cr, VIZ_INK_RGB);
        viz_text(cr, box.x + pad + sw + pad * 0.6, y, e[i].label, 0, 0.5, 0);
    }
    cairo_restore(cr);
    return box;
}
