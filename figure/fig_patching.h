/* fig_patching.h — the picture of a patching sweep (`ramtrace plot
 * patching`, and `ramtrace patch --plot FILE`): a layers x heads matrix of
 * the fraction each head recovers, and, when the sweep restored slots, one
 * row per restored slot beside it.  Not a trace figure: it draws an
 * analysis/an_patch.h result, so the kind also holds the sweep's command
 * line and run, which `ramtrace patch` shares (it adds the table). */
#ifndef FIG_PATCHING_H
#define FIG_PATCHING_H

#include "an_patch.h"
#include "fig_figure.h"
#include "rn_config.h"
#include "rn_error.h"

/* The sweep's options in --help, shared by patch and plot patching. */
#define FIG_PATCHING_SWEEP_HELP \
    "      --answer TOKEN    the clean input's answer (bytes: one byte, \\n, \\t,\n" \
    "                        \\\\ or <bos>; ids: the id; #N: the id N) (required)\n" \
    "      --wrong TOKEN     the other side of logit-diff (default: the corrupted\n" \
    "                        run's most likely token other than the answer)\n" \
    "      --metric M        logit-diff (default), prob or loss\n" \
    "      --slot-heads N    then restore, one at a time, each slot read at the last\n" \
    "                        position in the N heads that recover most (default 3;\n" \
    "                        0 = heads only): 2 + N*K more forward passes\n"

/* The command line of patch and plot patching: MODEL CLEAN CORRUPT and
 * the options of both. */
typedef struct {
    const char *model, *clean, *corrupt;
    const char *answer, *wrong; /* --answer (required), --wrong (NULL: default) */
    int metric;                 /* --metric: AN_METRIC_* (logit-diff) */
    long slot_heads;            /* --slot-heads (3) */
    int format;                 /* -f: RN_FMT_* of patch's table */
    const char *plot;           /* --plot FILE (NULL: none) */
    const char *out;            /* -o FILE (NULL: none) */
    long threads;               /* -j (0: the default) */
} fig_patching_args;

/* Parse argv (argv[0] the command; cmd names it in messages, "patch" or
 * "plot patching") into a: 0, or the exit status of a usage error (fe). */
int fig_patching_parse(int argc, char **argv, const char *cmd, const fig_front *fe, fig_patching_args *a);

/* A sweep that ran: the model, the two inputs' tokens and the result. */
typedef struct {
    rn_model model;
    int loaded;
    int *clean, *corrupt;
    an_patch_result r;
} fig_patching_sweep;

/* Load a->model, tokenize CLEAN and CORRUPT, check the figure's path
 * (figure: NULL for none) and run the sweep into s->r.  RN_EINPUT naming
 * the file or option for bad input.  fig_patching_sweep_free(s) in every
 * case. */
int fig_patching_run(const fig_patching_args *a, const char *figure, fig_patching_sweep *s, rn_error *err);
void fig_patching_sweep_free(fig_patching_sweep *s);

/* Write the figure to path (.png, .svg or .pdf; atomically). */
int fig_patching(const an_patch_result *r, const rn_config *c, const char *path, rn_error *err);

#endif
