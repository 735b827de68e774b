/* viz_legend.c — legend boxes (viz_legend.h). */
#include "viz_legend.h"

#include <math.h>
#include <stddef.h>

void viz_look_apply(cairo_t *cr, int look)
{
    static const double pat[5][4] = { { 0 }, { 7, 3.5 }, { 1.5, 2.5 }, { 8, 3, 1.5, 3 }, { 14, 4 } };
    static const int len[5] = { 0, 2, 2, 4, 2 };
    int k = look > 0 ? (look - 1) % 5 : 0;
    cairo_set_dash(cr, pat[k], len[k], 0);
}

void viz_look_marker(cairo_t *cr, int look, double x, double y, double rad)
{
    if (look <= 0) return;
    cairo_save(cr);
    cairo_set_dash(cr, NULL, 0, 0);
    switch ((look - 1) % 5) {
    case 0: cairo_arc(cr, x, y, rad, 0, 2 * M_PI); cairo_fill(cr); break;
    case 1: cairo_rectangle(cr, x - rad * 0.9, y - rad * 0.9, rad * 1.8, rad * 1.8); cairo_fill(cr); break;
    case 2:
        cairo_move_to(cr, x, y - rad * 1.2);
        cairo_line_to(cr, x + rad * 1.1, y + rad * 0.8);
        cairo_line_to(cr, x - rad * 1.1, y + rad * 0.8);
        cairo_close_path(cr);
        cairo_fill(cr);
        break;
    case 3:
        cairo_move_to(cr, x, y - rad * 1.25);
        cairo_line_to(cr, x + rad * 1.1, y);
        cairo_line_to(cr, x, y + rad * 1.25);
        cairo_line_to(cr, x - rad * 1.1, y);
        cairo_close_path(cr);
        cairo_fill(cr);
        break;
    default:
        cairo_set_line_width(cr, 1.6);
        cairo_move_to(cr, x - rad, y - rad); cairo_line_to(cr, x + rad, y + rad);
        cairo_move_to(cr, x - rad, y + rad); cairo_line_to(cr, x + rad, y - rad);
        cairo_stroke(cr);
        break;
    }
    cairo_restore(cr);
}

static void swatch(cairo_t *cr, const viz_legend_entry *e, double x, double y, double sw, double font)
{
    viz_set_rgb(cr, e->color);
    if (e->kind == VIZ_LEGEND_BOX) {
        cairo_rectangle(cr, x, y - font * 0.35, sw, font * 0.7);
        cairo_fill(cr);
    } else {
        cairo_save(cr);
        cairo_set_line_width(cr, e->width > 0 ? e->width : 2.2);
        viz_look_apply(cr, e->look);
        cairo_move_to(cr, x, y);
        cairo_line_to(cr, x + sw, y);
        cairo_stroke(cr);
        viz_look_marker(cr, e->look, x + sw / 2, y, 2.8);
        cairo_restore(cr);
    }
}

viz_rect viz_legend_draw(cairo_t *cr, viz_rect area, const viz_legend_entry *e, int n,
                         viz_corner corner, double font)
{
    viz_rect box = { 0, 0, 0, 0 };
    if (n <= 0) return box;
    cairo_save(cr);
    viz_font(cr, font * 0.9, 0);
    double sw = font * 2.4, pad = font * 0.5, line = font * 1.3, maxw = 0, roww = 0;
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
