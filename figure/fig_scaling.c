/* fig_scaling.c — `plot scaling`: MQAR accuracy against the order U and
 * the slots M over seeds (fig_mqar.h). */
#include <stdio.h>
#include <stdlib.h>

#include "an_results.h"
#include "fig_figure.h"
#include "fig_mqar.h"
#include "viz_lineplot.h"
#include "viz_surface.h"

const fig_kind_def fig_kind_scaling = {
    .name = "scaling", .order = 90, .input = FIG_INPUT_ARGS, .run = fig_mqar_run,
    .help = "MQAR accuracy against order U and slots M over seeds:\n"
            "ramtrace plot scaling --csv RESULTS.csv -o FILE",
};

/* One panel of the scaling figure: both metrics against key, for each of
 * the tags (one sweep each; label prefixes name them). */
static int scaling_panel(cairo_t *cr, viz_rect box, const an_result *r, int n, const char *const *tags,
                         const char *const *names, int ntags, const char *key, viz_axis x, const char *title,
                         viz_corner corner, double font, rn_error *err)
{
    double gx[4][32], gm[4][32], gl[4][32], gh[4][32];
    int gc[4][32], ns = 0;
    static const char *const metric[2] = { "mean_l64", "mean7" };
    static const char *const label[2] = { "mean of the L = 64 settings", "seven-setting mean" };
    char lab[4][96];
    viz_series s[4];
    for (int t = 0; t < ntags && t < 2; t++)
        for (int k = 0; k < 2; k++) {
            int m = an_results_by(r, n, tags[t], key, metric[k], gx[ns], gc[ns], gm[ns], gl[ns], gh[ns], 32);
            if (m <= 0) continue;
            snprintf(lab[ns], sizeof lab[ns], "%s%s", names[t], label[k]);
            s[ns] = (viz_series){ lab[ns], (size_t)m, gx[ns], gm[ns], 0, gl[ns], gh[ns] };
            ns++;
        }
    if (ns == 0) return rn_seterr(err, RN_EINPUT, "no scored rows tagged %s", tags[0]);
    viz_lineplot_style st;
    viz_lineplot_style_default(&st);
    st.font = font;
    st.looks = 1;
    st.corner = corner; /* the corner the data leave free */
    st.x = x;
    st.y = fig_mqar_accuracy_axis("MQAR accuracy (mean over seeds, min-max)");
    st.title = title;
    return viz_lineplot_draw(cr, box, s, ns, &st, err);
}

int fig_mqar_scaling(const fig_mqar_opts *o, rn_error *err)
{
    an_result *r = NULL;
    int nr = 0, rc;
    if ((rc = an_results_load(o->results, &r, &nr, err))) return rc;
    double W, H, dpi, font;
    fig_mqar_page(o, &W, &H, &dpi, &font);
    viz_surface sf;
    if ((rc = viz_surface_open(&sf, o->out, W, H, dpi, err))) { free(r); return rc; }
    static const char *const utags[2] = { "fig4-U", "fig4-U64" }, *const unames[2] = { "M = 256: ", "M = 64: " };
    static const char *const mtags[1] = { "fig4-M" }, *const mnames[1] = { "" };
    rc = scaling_panel(sf.cr, viz_rect_make(4, 4, W / 2 - 8, H - 8), r, nr, utags, unames, 2, "U",
                       viz_axis_make(0.5, 8.5, 0, 1, "order U (M = d_p^U fixed)"),
                       o->title ? o->title : "accuracy against order U", VIZ_BOTTOM_RIGHT, font, err);
    if (!rc)
        rc = scaling_panel(sf.cr, viz_rect_make(W / 2 + 4, 4, W / 2 - 8, H - 8), r, nr, mtags, mnames, 1, "M",
                           viz_axis_make(40, 6000, 1, 0, "slots M (U = 2)"), "accuracy against M", VIZ_TOP_RIGHT,
                           font, err);
    if (rc) viz_surface_abort(&sf);
    else rc = viz_surface_commit(&sf, err);
    free(r);
    return rc;
}
