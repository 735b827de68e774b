/* fig_opts.h — what a `ramtrace plot` of a traced run (or of a file) is
 * asked for: the options every kind of plot's own options reads
 * (fig_figure.h draws them, fig_ctx.h opens the run they name). */
#ifndef FIG_OPTS_H
#define FIG_OPTS_H

#include <stdint.h>

#include "an_shards.h"
#include "an_simrun.h" /* an_progress_fn */
#include "viz_colormap.h"

struct fig_kind_def; /* fig_figure.h */

typedef struct {
    const struct fig_kind_def *kind;
    const char *db_path;      /* the trace database (a FILE kind: its file) */
    const char *out_path;     /* .png, .svg or .pdf */
    int64_t run_id;           /* 0 = the latest run */
    const char *layers;       /* "0-3,7" / "all" / NULL (all) */
    const char *heads;
    const char *ops;          /* "r", "w", "rw" (NULL = rw) */
    int64_t pos_lo, pos_hi;   /* positions [lo, hi); hi < 0 = to the end */
    double width, height;     /* page in px (0 = kind's default) */
    double dpi;               /* PNG resolution (96) */
    double font;              /* label size in px (0 = 13) */
    int cols;                 /* trace grid columns (0 = about square) */
    int buckets, slot_bins;   /* heatmap bins (0 = defaults) */
    int model;                /* heatmap: layers x heads grid */
    int log;                  /* heatmap: log colour; mrc: log capacity axis */
    viz_cmap cmap;
    int palette;              /* trace: 0 Okabe-Ito vermilion/blue, 1 the paper's red/green */
    int addr;                 /* trace: y = address before CAPE instead of the slot */
    const char *policies;     /* mrc: policy list (NULL = lru,fifo,clock,arc,opt) */
    const char *scope;        /* mrc/reuse: head, layer, model (NULL = model, as simulate) */
    int32_t warmup;           /* mrc: tokens that warm the caches uncounted (0) */
    an_shards_opts sample;    /* mrc: rate 0 = exact curves; else SHARDS (an_shards.h) */
    const char *title;        /* overrides the default title */
    an_progress_fn progress;  /* mrc: called per simulation; non-zero stops (may be NULL) */
    void *progress_user;
} fig_opts;

void fig_opts_default(fig_opts *o);

/* Parse a --palette name ("okabe-ito", "paper"); -1 if unknown. */
int fig_palette_from_name(const char *name);

#endif
