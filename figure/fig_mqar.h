/* fig_mqar.h — the MQAR figures of docs/mqar-frontier.md, drawn from
 * scripts/mqar-sweep's results CSV (analysis/an_results.h):
 *
 *   frontier  accuracy (seven-setting mean) against total state in
 *             Zoology's units, RAM-Net's frontier (the best run at each
 *             state or less) beside the published baselines of an anchors
 *             CSV (the paper's Fig. 3): one line for rows tagged fig3
 *             (Zoology's training mix), one for rows tagged length (the
 *             mix with (512,128) and (1024,256) added: a deviation);
 *             a second panel puts RAM-Net at its active state per token
 *             (2K slots of d_v + 1 floats per head and layer), the
 *             baselines where they are (a recurrent model reads and writes
 *             all of its state at every token);
 *   scaling   accuracy against the product-softmax order U at fixed M (rows
 *             tagged fig4-U, M = 256, and fig4-U64, M = 64), and against M
 *             at fixed U (fig4-M) (the paper's Fig. 4): the mean over
 *             seeds, min to max as error bars, for the seven-setting mean
 *             and the mean of the three L = 64 settings.
 *
 * Written atomically (PNG, SVG or PDF by extension); nothing on error.
 * Each is a kind of its own (fig_frontier.c, fig_scaling.c); this header
 * and fig_mqar.c hold what they share. */
#ifndef FIG_MQAR_H
#define FIG_MQAR_H

#include "fig_figure.h"
#include "rn_error.h"
#include "viz_axes.h"

typedef struct {
    const char *results;   /* the sweep's CSV */
    const char *anchors;   /* frontier: the baselines' CSV (NULL: RAM-Net alone) */
    const char *out;
    const char *title;     /* NULL: the default */
    double width, height;  /* px (0: 1100 x 460) */
    double dpi;            /* PNG resolution (0: 96) */
    double font;           /* label size (0: 13) */
} fig_mqar_opts;

int fig_mqar_frontier(const fig_mqar_opts *o, rn_error *err); /* fig_frontier.c */
int fig_mqar_scaling(const fig_mqar_opts *o, rn_error *err);  /* fig_scaling.c */

/* The page of o: width, height, dpi and font, each o's or its default. */
void fig_mqar_page(const fig_mqar_opts *o, double *W, double *H, double *dpi, double *font);

/* `plot frontier|scaling --csv RESULTS.csv ... -o FILE` (argv[0] the
 * kind): parse plot's page options, --csv and (frontier) --anchors, then
 * draw; the exit status (usage errors and failures through fe).  Both
 * kinds' run. */
int fig_mqar_run(int argc, char **argv, const fig_front *fe);

/* The accuracy axis of both figures: 0 to 1 (a hair above, so points at 1
 * stay inside the frame), ticks 0 to 1; accuracy cannot exceed 1. */
viz_axis fig_mqar_accuracy_axis(const char *label);

#endif
