/* fig_frontier.c — `plot frontier`: MQAR accuracy against total and
 * active state, RAM-Net's frontier beside published baselines
 * (fig_mqar.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "an_results.h"
#include "fig_figure.h"
#include "fig_mqar.h"
#include "viz_lineplot.h"
#include "viz_surface.h"

const fig_kind_def fig_kind_frontier = {
    .name = "frontier", .order = 80, .input = FIG_INPUT_ARGS, .run = fig_mqar_run,
    .help = "MQAR accuracy against total and active state, RAM-Net beside\n"
            "published baselines: ramtrace plot frontier --csv RESULTS.csv\n"
            "[--anchors BASELINES.csv] -o FILE (docs/mqar-frontier.md)",
};

#define MAXS 16 /* series per panel */

/* A shape learned MQAR when its mean on the three L = 64 settings (the
 * lengths it was trained on) reaches this; the runs that did not learn
 * answer with some value of the context, 0.09-0.15 there. */
#define LEARNED_L64 0.5

/* RAM-Net's rows tagged `tag` as a frontier, in both panels: at each state
 * size the best mean of any shape (at its best lr) with no more state.  A
 * shape that did not learn (mean_l64 < LEARNED_L64) stays in the CSV and the
 * doc's tables and is left out of the line: with less active state than
 * every shape that learned, it would otherwise start the active-state line
 * near 0.  x/y of the total-state panel go to xs/ys, of the active-state
 * panel to xa/ya (each at most `max` points; the two x orders differ).
 * Returns the number of points (0: no scored row has the tag). */
static int frontier_of(const an_result *r, int nr, const char *tag, int *best, int max, double *xs, double *ys,
                       double *xa, double *ya)
{
    int nb = an_results_best(r, nr, tag, best, max), n = 0;
    for (int i = 0; i < nb; i++)
        if (r[best[i]].mean_l64 >= LEARNED_L64) best[n++] = best[i];
    for (int panel = 0; panel < 2; panel++) {
        double *ox = panel ? xa : xs, *oy = panel ? ya : ys;
        int ord[256];
        for (int i = 0; i < n; i++) ord[i] = best[i];
        for (int i = 1; i < n; i++)
            for (int j = i; j > 0; j--) {
                double a = panel ? r[ord[j]].active_bytes : r[ord[j]].state_bytes;
                double b = panel ? r[ord[j - 1]].active_bytes : r[ord[j - 1]].state_bytes;
                if (a >= b) break;
                int t = ord[j]; ord[j] = ord[j - 1]; ord[j - 1] = t;
            }
        double m = -1;
        for (int i = 0; i < n; i++) {
            m = fmax(m, r[ord[i]].mean7);
            ox[i] = panel ? r[ord[i]].active_bytes : r[ord[i]].state_bytes;
            oy[i] = m;
        }
    }
    return n;
}

int fig_mqar_frontier(const fig_mqar_opts *o, rn_error *err)
{
    an_result *r = NULL;
    an_anchor *a = NULL;
    int nr = 0, na = 0, rc;
    if ((rc = an_results_load(o->results, &r, &nr, err))) return rc;
    if (o->anchors && (rc = an_anchors_load(o->anchors, &a, &na, err))) { free(r); return rc; }
    int *best = malloc(sizeof *best * (size_t)(nr + 1));
    double *buf = malloc(sizeof *buf * (size_t)(2 * na + 2));
    if (!best || !buf) { rc = rn_seterr(err, RN_ENOMEM, "out of memory"); goto done; }
    double *ax = buf, *ay = ax + na;
    /* two RAM-Net lines, each its frontier: trained on Zoology's mix (tag
     * fig3), and on the mix with the two longest test settings added (tag
     * length, a deviation from the protocol, named so in the legend) */
    enum { MAXP = 256 };
    static const char *const tags[2] = { "fig3", "length" };
    static const char *const names[2] = { "RAM-Net (ours), Zoology's training mix",
                                          "RAM-Net (ours), mix + (512,128), (1024,256)" };
    double fx[2][2][MAXP], fy[2][2][MAXP]; /* [series][panel][point] */
    int fn[2];
    for (int t = 0; t < 2; t++)
        fn[t] = frontier_of(r, nr, tags[t], best, nr < MAXP ? nr : MAXP, fx[t][0], fy[t][0], fx[t][1], fy[t][1]);
    if (fn[0] == 0) {
        rc = rn_seterr(err, RN_EINPUT, "%s: no scored rows tagged fig3 that learned (mean_l64 >= %.1f)", o->results,
                       LEARNED_L64);
        goto done;
    }
    viz_series s1[MAXS], s2[MAXS];
    int ns = 0;
    for (int t = 0; t < 2; t++) {
        if (!fn[t]) continue;
        s1[ns] = (viz_series){ names[t], (size_t)fn[t], fx[t][0], fy[t][0], 0, NULL, NULL };
        s2[ns] = (viz_series){ names[t], (size_t)fn[t], fx[t][1], fy[t][1], 0, NULL, NULL };
        ns++;
    }
    /* the baselines: one series per model, in file order (points sorted by state there) */
    for (int i = 0, k = 0; i < na && ns < MAXS; ) {
        int j = i;
        while (j < na && !strcmp(a[j].model, a[i].model)) {
            ax[k + j - i] = a[j].state_bytes;
            ay[k + j - i] = a[j].accuracy;
            j++;
        }
        s1[ns] = (viz_series){ a[i].model, (size_t)(j - i), ax + k, ay + k, 0, NULL, NULL };
        s2[ns] = s1[ns];
        ns++;
        k += j - i;
        i = j;
    }
    double W, H, dpi, font;
    fig_mqar_page(o, &W, &H, &dpi, &font);
    viz_surface sf;
    if ((rc = viz_surface_open(&sf, o->out, W, H, dpi, err))) goto done;
    viz_lineplot_style st;
    viz_lineplot_style_default(&st);
    st.font = font;
    st.looks = 1;
    st.corner = VIZ_BOTTOM_RIGHT;
    st.y = fig_mqar_accuracy_axis("MQAR accuracy (mean of 7 settings)");
    double lo = INFINITY, hi = 0;
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < fn[t]; i++) {
            lo = fmin(lo, fmin(fx[t][0][i], fx[t][1][i]));
            hi = fmax(hi, fx[t][0][i]);
        }
    for (int i = 0; i < na; i++) { lo = fmin(lo, a[i].state_bytes); hi = fmax(hi, a[i].state_bytes); }
    lo = pow(10, floor(log10(lo))), hi = pow(10, ceil(log10(hi)));
    st.x = viz_axis_make(lo, hi, 1, 0, "total state, bytes (Zoology's units)");
    st.title = o->title ? o->title : "MQAR: accuracy against state";
    rc = viz_lineplot_draw(sf.cr, viz_rect_make(4, 4, W / 2 - 8, H - 8), s1, ns, &st, err);
    if (!rc) {
        st.x.label = "active state per token, bytes (baselines: all of it)";
        st.title = "against active state";
        st.legend = 0;
        rc = viz_lineplot_draw(sf.cr, viz_rect_make(W / 2 + 4, 4, W / 2 - 8, H - 8), s2, ns, &st, err);
    }
    if (rc) viz_surface_abort(&sf);
    else rc = viz_surface_commit(&sf, err);
done:
    free(best);
    free(buf);
    free(r);
    free(a);
    return rc;
}
