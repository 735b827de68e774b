/* fig_figure.h — the kinds of `ramtrace plot`, and the drawing of one.
 *
 * figure/ is the one place that joins analysis to drawing.  A figure opens
 * its input (a traced run through analysis/an_load.h, so it refuses what
 * every analysis refuses; or a CSV, or a model's patching sweep), computes
 * what it shows with analysis/, fills the plain data structs of viz/ and
 * draws them into a viz_surface (PNG, SVG or PDF by extension, written
 * atomically).  viz/ itself knows nothing of traces or analysis.
 *
 * A kind is one file: figure/fig_NAME.c defines, at the start of a line,
 * `const fig_kind_def fig_kind_NAME = { ... };`.  make collects those
 * definitions into the table build/gen/fig_kinds.h (mk/figure.mk); plot
 * --help, its errors, the bash completion (scripts/gen-completion reads
 * --help) and `ramtrace plot`'s one dispatch all read that table.
 */
#ifndef FIG_FIGURE_H
#define FIG_FIGURE_H

#include <stddef.h>

#include "fig_opts.h"
#include "rn_error.h"

struct fig_ctx; /* fig_ctx.h */

/* What a kind draws from, and so how `ramtrace plot` reads its arguments. */
typedef enum {
    FIG_INPUT_TRACE, /* plot KIND TRACE.db [plot's options]: draw gets the opened run */
    FIG_INPUT_FILE,  /* plot KIND FILE [plot's options]: draw gets the options only
                        (f->o; o->db_path names FILE) */
    FIG_INPUT_ARGS   /* plot KIND ARGS...: run reads its own arguments and options */
} fig_input;

/* What the command line lends a kind that reads its own arguments (figure/
 * may not include cli/; cli.h describes each): one-line usage errors and
 * failures, both returning the exit status, strict option-value parsers
 * and the thread policy. */
typedef struct {
    int (*usage_error)(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
    int (*fail)(const rn_error *err);
    int (*parse_long)(const char *opt, const char *s, long lo, long hi, long *out, rn_error *err);
    int (*parse_double)(const char *opt, const char *s, double lo, double hi, double *out, rn_error *err);
    void (*threads)(long n);
} fig_front;

typedef struct fig_kind_def {
    const char *name;
    const char *help;  /* its lines in plot --help, '\n'-separated, unindented */
    int order;         /* plot --help lists the kinds by increasing order */
    fig_input input;
    /* TRACE and FILE: draw the figure into f->o->out_path; RN_EINPUT (a
     * message naming the file or option) for bad input, nothing written
     * on error */
    int (*draw)(struct fig_ctx *f, rn_error *err);
    /* ARGS: argv[0] is the kind's name; returns the exit status (fe's
     * usage_error or fail on error, else 0) */
    int (*run)(int argc, char **argv, const fig_front *fe);
    const char *usage; /* ARGS: its own --help text (NULL: plot's) */
} fig_kind_def;

/* The kinds, in plot --help's order (i from 0 to fig_kind_count() - 1). */
int fig_kind_count(void);
const fig_kind_def *fig_kind_at(int i);

/* The kind named name; NULL if none is. */
const fig_kind_def *fig_kind_find(const char *name);

/* The names, "trace, heatmap, ..." (truncated to cap). */
void fig_kind_list(char *buf, size_t cap);

/* Draw the figure of o->kind (a TRACE or FILE kind) into o->out_path.
 * RN_EINPUT (message naming the file or option) for a bad input, run,
 * selection or output path, RN_EINTR when o->progress asked to stop;
 * nothing is written on error. */
int fig_draw(const fig_opts *o, rn_error *err);

#endif
