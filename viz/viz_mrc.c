/* viz_mrc.c — hit-ratio curves (viz_mrc.h): a line chart with the y axis
 * fixed to [0, 1] so curves of different runs compare at a glance; each
 * policy has its own dash and marker besides its colour (LRU and CLOCK
 * often overlap).  The top axis repeats the capacity ticks as bytes of
 * state and as a share of the state a cache serves. */
#include "viz_mrc.h"

#include <math.h>
#include <stdio.h>

static int has_top(const viz_mrc_data *d) { return d->bytes_per_slot > 0 && d->total_slots > 0; }

static void style(const viz_mrc_data *d, double font, viz_lineplot_style *st)
{
    viz_lineplot_style_default(st);
    st->font = font;
    st->title = d->title[0] ? d->title : NULL;
    st->x = viz_axis_make(0, 0, d->log_x, 0, d->cap_label ? d->cap_label : "cache capacity (slots)");
    st->y = viz_axis_make(0, 1, 0, 0, "hit ratio");
    st->corner = VIZ_BOTTOM_RIGHT;
    st->looks = 1;
}

/* Room on top for the second axis's labels and title, and above them the
 * chart's title (st->title is then cleared: the caller draws it). */
static viz_rect chart_rect(viz_rect r, const viz_mrc_data *d, double font, viz_lineplot_style *st)
{
    if (!has_top(d)) return r;
    double top = font * 2.9;
    if (st->title) {
        top += font * 1.8;
        st->title = NULL;
    }
    return viz_rect_inset(r, 0, top, 0, 0);
}

viz_rect viz_mrc_area(viz_rect r, const viz_mrc_data *d, double font)
{
    viz_lineplot_style st;
    style(d, font, &st);
    viz_rect c = chart_rect(r, d, font, &st);
    return viz_lineplot_area(c, &st);
}

void viz_bytes_text(double b, char *buf, size_t cap)
{
    static const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    int u = 0;
    while (b >= 1024 && u < 4) {
        b /= 1024;
        u++;
    }
    snprintf(buf, cap, b >= 100 || b == floor(b) ? "%.0f %s" : "%.1f %s", b, unit[u]);
}

/* Share as text with the digits it needs: "100%", "6.2%", "0.39%". */
static void share_text(double f, char *buf, size_t cap)
{
    double p = f * 100;
    snprintf(buf, cap, p >= 10 ? "%.0f%%" : p >= 1 ? "%.1f%%" : "%.2g%%", p);
}

/* The top axis: at each bottom tick, its bytes and share of the state. */
static void top_axis(cairo_t *cr, viz_rect a, const viz_axis *x, const viz_mrc_data *d, double font)
{
    double ticks[VIZ_MAX_TICKS], step;
    int target = (int)(a.w / (font * 6.5));
    int n = viz_axis_ticks(x, target < 2 ? 2 : target, ticks, VIZ_MAX_TICKS, &step);
    char b[32], s[32], lab[72];
    cairo_save(cr);
    viz_set_rgb(cr, VIZ_INK_RGB);
    cairo_set_line_width(cr, 1.0);
    double prev_right = -1e9;
    for (int i = 0; i < n; i++) {
        double px = viz_axis_map(x, ticks[i], a.x, a.x + a.w);
        cairo_move_to(cr, px, a.y);
        cairo_line_to(cr, px, a.y - font * 0.4);
        cairo_stroke(cr);
        viz_bytes_text(ticks[i] * d->bytes_per_slot, b, sizeof b);
        /* a capacity beyond the state has no share (the axis pads past it) */
        if (ticks[i] <= d->total_slots * (1 + 1e-9)) share_text(ticks[i] / d->total_slots, s, sizeof s);
        else s[0] = 0;
        viz_font(cr, font * 0.8, 0);
        snprintf(lab, sizeof lab, "%s", b);
        double w = viz_text_width(cr, lab) > viz_text_width(cr, s) ? viz_text_width(cr, lab) : viz_text_width(cr, s);
        if (px - w / 2 < prev_right + font * 0.4) continue; /* thin labels that would touch */
        double ax = 0.5, lx = px;
        if (px + w / 2 > a.x + a.w + font) { ax = 1; lx = a.x + a.w + font; } /* keep the last inside */
        prev_right = lx + w * (1 - ax);
        if (s[0]) viz_text(cr, lx, a.y - font * 0.5, s, ax, 1, 0);
        viz_text(cr, lx, a.y - font * 1.45, lab, ax, 1, 0);
    }
    viz_font(cr, font * 0.9, 0);
    viz_text(cr, a.x + a.w / 2, a.y - font * 2.5, "capacity as state bytes and share of the state served", 0.5, 1, 0);
    cairo_restore(cr);
}

int viz_mrc_draw(cairo_t *cr, viz_rect r, const viz_mrc_data *d, double font, rn_error *err)
{
    viz_lineplot_style st;
    style(d, font, &st);
    if (d->n < 1) return rn_seterr(err, RN_EINPUT, "hit-ratio plot: no policies selected");
    const char *title = st.title;
    viz_rect cr_r = chart_rect(r, d, font, &st);
    if (title && !st.title) {
        /* the title goes above the top axis */
        viz_font(cr, font * 1.1, 1);
        viz_set_rgb(cr, VIZ_INK_RGB);
        viz_text_fit(cr, r.x + r.w / 2, r.y + font * 0.2, title, r.w, 0.5, 0);
    }
    viz_axis x;
    viz_rect a;
    int rc = viz_lineplot_draw_ex(cr, cr_r, d->curves, d->n, &st, &x, &a, err);
    if (rc) return rc;
    if (has_top(d)) top_axis(cr, a, &x, d, font);
    return RN_OK;
}
