/* fig_ctx.h — what every figure kind shares (internal to figure/): the
 * opened run, its traced heads intersected with --layers/--heads, the ops
 * and the position range, plus loading and page helpers.  Each kind is its
 * own file (fig_trace.c, fig_heatmap.c, ...) whose fig_kind_def's draw
 * gets the context (fig_figure.h). */
#ifndef FIG_CTX_H
#define FIG_CTX_H

#include <cairo.h>
#include <stddef.h>
#include <stdint.h>

#include "an_load.h"
#include "an_stream.h"
#include "fig_opts.h"
#include "viz_trace.h"

typedef struct fig_ctx {
    const fig_opts *o;
    an_run run;               /* the open run (run.run: info and config) */
    tr_head_info *heads;      /* the selected traced heads, by (layer, head) */
    int n_heads;
    int ops;                  /* RN_OPS_* */
    int64_t M;                /* slots */
    int64_t lo, hi;           /* position range [lo, hi) */
    double font;              /* label size in px */
} fig_ctx;

/* Open the run (an_run_open), select its heads and resolve the range.
 * RN_EINPUT when no traced head matches or the range is empty.  Close with
 * fig_ctx_close in every case. */
int fig_ctx_open(fig_ctx *f, const fig_opts *o, rn_error *err);
void fig_ctx_close(fig_ctx *f);

/* Events of one head with ops f->ops in [f->lo, f->hi), as plot accesses
 * (malloc'd); with f->o->addr the address before CAPE stands in the slot's
 * place. */
int fig_load_head(const fig_ctx *f, const tr_head_info *h, viz_access **out, size_t *n, rn_error *err);

/* The access streams of the selected heads over positions [0, f->hi) in the
 * scope named by f->o->scope (default model, as `ramtrace simulate`). */
int fig_load_streams(const fig_ctx *f, int *scope, an_streams *ss, rn_error *err);

/* "layer L, head H, CAPE on|off". */
void fig_head_title(const tr_head_info *h, char *buf, size_t cap);

/* v if positive, else the default d. */
static inline double fig_dflt(double v, double d) { return v > 0 ? v : d; }

/* Open a W x H page at f->o->out_path, call draw on it, and commit it (or
 * abort it, leaving nothing, when draw fails). */
typedef int (*fig_draw_fn)(cairo_t *cr, double W, double H, void *user, rn_error *err);
int fig_render(const fig_ctx *f, double W, double H, fig_draw_fn draw, void *user, rn_error *err);

/* A bold page title of size px centred at the top of a page W wide. */
void fig_page_title(cairo_t *cr, double W, double size, const char *text);

#endif
