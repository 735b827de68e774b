/* viz_colorbar.c — colour bars (viz_colorbar.h). */
#include "viz_colorbar.h"

#include <math.h>

double viz_colorbar_width(double font)
{
    return font * 6.5;
}

void viz_colorbar_draw(cairo_t *cr, viz_rect bar, viz_cmap cmap, const viz_axis *scale, double font)
{
    cairo_save(cr);
    /* a gradient with one stop per 1/64 of the range reproduces the map */
    cairo_pattern_t *g = cairo_pattern_create_linear(0, bar.y + bar.h, 0, bar.y);
    for (int i = 0; i <= 64; i++) {
        viz_rgb c = viz_cmap_rgb(cmap, i / 64.0);
        cairo_pattern_add_color_stop_rgb(g, i / 64.0, c.r, c.g, c.b);
    }
    cairo_rectangle(cr, bar.x, bar.y, bar.w, bar.h);
    cairo_set_source(cr, g);
    cairo_fill(cr);
    cairo_pattern_destroy(g);
    viz_set_rgb(cr, VIZ_INK_RGB);
    cairo_set_line_width(cr, 1.0);
    cairo_rectangle(cr, bar.x, bar.y, bar.w, bar.h);
    cairo_stroke(cr);

    double ticks[VIZ_MAX_TICKS], step;
    char lab[VIZ_MAX_TICKS][VIZ_TICK_LABEL];
    int target = (int)(bar.h / (font * 2.5));
    int n = viz_axis_ticks(scale, target < 2 ? 2 : target, ticks, VIZ_MAX_TICKS, &step);
    viz_axis_tick_labels(scale, ticks, n, step, lab);
    viz_font(cr, font * 0.85, 0);
    double maxw = 0;
    for (int i = 0; i < n; i++) {
        double y = viz_axis_map(scale, ticks[i], bar.y + bar.h, bar.y);
        cairo_move_to(cr, bar.x + bar.w, y);
        cairo_line_to(cr, bar.x + bar.w + font * 0.35, y);
        cairo_stroke(cr);
        viz_text(cr, bar.x + bar.w + font * 0.5, y, lab[i], 0, 0.5, 0);
        double w = viz_text_width(cr, lab[i]);
        if (w > maxw) maxw = w;
    }
    if (scale->label) {
        viz_font(cr, font * 0.9, 0);
        viz_text(cr, bar.x + bar.w + font * 0.9 + maxw + font * 0.2, bar.y + bar.h / 2, scale->label,
                 0.5, 0, -M_PI / 2);
    }
    cairo_restore(cr);
}
