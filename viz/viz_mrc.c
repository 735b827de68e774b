/* viz_mrc.c — hit-ratio curves (viz_mrc.h): a line chart with the y axis
 * fixed to [0, 1] so curves of different runs compare at a glance. */
#include "viz_mrc.h"

static void style(const viz_mrc_data *d, double font, viz_lineplot_style *st)
{
    viz_lineplot_style_default(st);
    st->font = font;
    st->title = d->title[0] ? d->title : NULL;
    st->x = viz_axis_make(0, 0, d->log_x, 0, "cache capacity (slots)");
    st->y = viz_axis_make(0, 1, 0, 0, "hit ratio");
    st->corner = VIZ_BOTTOM_RIGHT;
}

viz_rect viz_mrc_area(viz_rect r, const viz_mrc_data *d, double font)
{
    viz_lineplot_style st;
    style(d, font, &st);
    return viz_lineplot_area(r, &st);
}

int viz_mrc_draw(cairo_t *cr, viz_rect r, const viz_mrc_data *d, double font, rn_error *err)
{
    viz_lineplot_style st;
    style(d, font, &st);
    if (d->n < 1) return rn_seterr(err, RN_EINPUT, "hit-ratio plot: no policies selected");
    return viz_lineplot_draw(cr, r, d->curves, d->n, &st, err);
}
