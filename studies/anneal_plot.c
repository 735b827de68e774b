/* anneal_plot.c — the figure of docs/training.md "Why K = 8 from step 0
 * does not learn": from the CSVs of scripts/anneal-study, against the
 * training step, one series per run,
 *   (a) layer 0, pairs (p, p+1): the read's weight share on the slots the
 *       previous position wrote, minus the same share for other positions
 *       (0 = chance): the CAPE heads carrying the key forward;
 *   (b) layer 1, pairs (value 2i+1, query): share on the right pair's
 *       write minus the share on the other pair's (0 = the query cannot
 *       tell the pairs apart);
 *   (c) accuracy at the model's K (8), from the training log.
 * Shares are averaged over the layer's heads.
 *
 * usage: anneal_plot OUT.png|svg|pdf CSV...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viz_lineplot.h"
#include "viz_style.h"
#include "viz_surface.h"

enum { MAXRUN = 8, MAXSTEP = 64 };

typedef struct {
    char name[64];
    int n;
    double step[MAXSTEP], a[MAXSTEP], b[MAXSTEP], acc[MAXSTEP];
    int na[MAXSTEP], nb[MAXSTEP];
} run;

static run R[MAXRUN];
static int NR;

/* The row's point of run `name` at `step` (made when new). */
static int point(const char *name, double step, run **out)
{
    int r = 0;
    while (r < NR && strcmp(R[r].name, name)) r++;
    if (r == NR) {
        if (NR == MAXRUN) return -1;
        snprintf(R[NR++].name, sizeof R[0].name, "%s", name);
    }
    run *u = &R[r];
    int i = 0;
    while (i < u->n && u->step[i] != step) i++;
    if (i == u->n) {
        if (u->n == MAXSTEP) return -1;
        u->step[u->n++] = step;
    }
    *out = u;
    return i;
}

/* Columns of scripts/anneal-study's CSV. */
enum { C_RUN, C_STEP, C_ACC, C_SET, C_LAYER, C_HEAD, C_SHARE = 20, C_OSHARE = 23, NCOL = 24 };

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: anneal_plot OUT.png|svg|pdf CSV...\n");
        return 2;
    }
    for (int f = 2; f < argc; f++) {
        FILE *in = fopen(argv[f], "r");
        if (!in) { fprintf(stderr, "anneal_plot: cannot open %s\n", argv[f]); return 2; }
        char line[2048];
        int ln = 0;
        while (fgets(line, sizeof line, in)) {
            if (ln++ == 0) continue; /* header */
            char *col[NCOL], *p = line;
            int n = 0;
            while (n < NCOL && p) { col[n++] = p; p = strchr(p, ','); if (p) *p++ = 0; }
            if (n < NCOL) { fprintf(stderr, "anneal_plot: %s:%d: short row\n", argv[f], ln); return 2; }
            run *u;
            int i = point(col[C_RUN], atof(col[C_STEP]), &u);
            if (i < 0) { fprintf(stderr, "anneal_plot: too many runs or steps\n"); return 2; }
            double ex = atof(col[C_SHARE]) - atof(col[C_OSHARE]);
            int layer = atoi(col[C_LAYER]);
            u->acc[i] = atof(col[C_ACC]);
            if (layer == 0 && !strcmp(col[C_SET], "prev")) { u->a[i] += ex; u->na[i]++; }
            if (layer == 1 && !strcmp(col[C_SET], "pair")) { u->b[i] += ex; u->nb[i]++; }
        }
        fclose(in);
    }
    static double ya[MAXRUN][MAXSTEP], yb[MAXRUN][MAXSTEP];
    viz_series sa[MAXRUN], sb[MAXRUN], sc[MAXRUN];
    for (int r = 0; r < NR; r++) {
        for (int i = 0; i < R[r].n; i++) {
            ya[r][i] = R[r].na[i] ? R[r].a[i] / R[r].na[i] : 0;
            yb[r][i] = R[r].nb[i] ? R[r].b[i] / R[r].nb[i] : 0;
        }
        sa[r] = (viz_series){ R[r].name, (size_t)R[r].n, R[r].step, ya[r], 0, NULL, NULL };
        sb[r] = (viz_series){ R[r].name, (size_t)R[r].n, R[r].step, yb[r], 0, NULL, NULL };
        sc[r] = (viz_series){ R[r].name, (size_t)R[r].n, R[r].step, R[r].acc, 0, NULL, NULL };
    }
    viz_surface s;
    rn_error err = { 0 };
    const double W = 1200, H = 400;
    if (viz_surface_open(&s, argv[1], W, H, 96, &err)) { fprintf(stderr, "anneal_plot: %s\n", err.msg); return 2; }
    viz_lineplot_style st;
    viz_lineplot_style_default(&st);
    st.markers = 1;
    st.looks = 1;
    st.legend = 0;
    st.corner = VIZ_TOP_LEFT;
    st.x.label = "training step";
    st.x.lo = 0; /* from step 0 to the last checkpoint */
    for (int r = 0; r < NR; r++)
        for (int i = 0; i < R[r].n; i++)
            if (R[r].step[i] > st.x.hi) st.x.hi = R[r].step[i];
    int rc = 0;
    viz_rect page = viz_rect_make(0, 0, W, H);
    st.title = "(a) layer 0: read at p+1 on the write at p";
    st.y.label = "read share minus chance";
    rc = rc ? rc : viz_lineplot_draw(s.cr, viz_rect_grid(page, 1, 3, 0, 8), sa, NR, &st, &err);
    st.title = "(b) layer 1: query on its pair's write";
    st.y.label = "share minus the other pair's";
    st.legend = 1; /* top left of (b): empty before the pairs separate */
    rc = rc ? rc : viz_lineplot_draw(s.cr, viz_rect_grid(page, 1, 3, 1, 8), sb, NR, &st, &err);
    st.title = "(c) accuracy at K = 8";
    st.legend = 0;
    st.y.label = "accuracy";
    st.y.lo = 0;
    st.y.hi = 1;
    rc = rc ? rc : viz_lineplot_draw(s.cr, viz_rect_grid(page, 1, 3, 2, 8), sc, NR, &st, &err);
    if (rc) { viz_surface_abort(&s); fprintf(stderr, "anneal_plot: %s\n", err.msg); return 2; }
    if (viz_surface_commit(&s, &err)) { fprintf(stderr, "anneal_plot: %s\n", err.msg); return 2; }
    return 0;
}
