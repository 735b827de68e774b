/* viz_figure.h — whole figures from a trace database, written to a file:
 * the logic behind `ramtrace plot KIND trace.db -o FILE`.
 *
 * A figure reads a run through trace/tr_reader.h, computes what it shows
 * with analysis/ where needed (cache policies, reuse, attribution), fills
 * the plain data structs of the viz_* plots and draws them into a
 * viz_surface (PNG, SVG or PDF by extension, written atomically).
 */
#ifndef VIZ_FIGURE_H
#define VIZ_FIGURE_H

#include <stdint.h>

#include "rn_error.h"
#include "viz_colormap.h"

typedef enum {
    VIZ_FIG_TRACE = 0, VIZ_FIG_HEATMAP, VIZ_FIG_MRC, VIZ_FIG_REUSE, VIZ_FIG_ATTRIBUTION
} viz_fig_kind;

/* Parse "trace", "heatmap", "mrc", "reuse", "attribution"; -1 if unknown. */
int viz_fig_kind_from_name(const char *name);
const char *viz_fig_kind_name(int kind);

typedef struct {
    int kind;                 /* viz_fig_kind */
    const char *db_path;
    const char *out_path;     /* .png, .svg or .pdf */
    int64_t run_id;           /* 0 = the latest run */
    const char *layers;       /* "0-3,7" / "all" / NULL (kind's default) */
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
    const char *policies;     /* mrc: policy list (NULL = lru,fifo,clock,arc,opt) */
    const char *scope;        /* mrc/reuse: head, layer, model (NULL = head) */
    const char *title;        /* overrides the default title */
} viz_fig_opts;

void viz_fig_opts_default(viz_fig_opts *o);

/* Draw the figure into o->out_path.  RN_EINPUT (message naming the file or
 * option) for a bad database, run, selection or output path; nothing is
 * written on error. */
int viz_figure(const viz_fig_opts *o, rn_error *err);

#endif
