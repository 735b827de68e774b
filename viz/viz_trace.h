/* viz_trace.h — the memory-trace plot (the paper's appendix B figure):
 * x = token position, y = memory slot (or address), writes and reads in two
 * colours (Okabe-Ito vermilion and blue by default, the paper's red and
 * green as an option) with opacity by weight; one panel per head, several
 * heads in a grid; a dashed line where the prompt ends and generation
 * begins.
 *
 * The plot reads a plain event list, so it does not depend on where the
 * events came from (trace databases, analysis, synthetic tests).
 */
#ifndef VIZ_TRACE_H
#define VIZ_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "rn_error.h"
#include "rn_probe.h"
#include "viz_style.h"

/* One access: op RN_OP_WRITE or RN_OP_READ, weight in [0, 1]. */
typedef struct {
    int64_t pos;
    int64_t slot;
    float weight;
    uint8_t op;
} viz_access;

/* One panel's data: positions [pos_lo, pos_hi), slots [0, n_slots). */
typedef struct {
    int64_t pos_lo, pos_hi;
    int64_t n_slots;
    size_t n;
    const viz_access *ev;
    char title[160];
    int64_t gen_pos;    /* first generated position: a marker is drawn there
                         * when pos_lo < gen_pos < pos_hi (0: none) */
} viz_trace_data;

typedef struct {
    double font;        /* label size in px (VIZ_FONT_SIZE) */
    int show_writes;    /* draw writes (1) */
    int show_reads;     /* draw reads (1) */
    double min_alpha;   /* opacity of the weakest event (0.25); the panel's
                         * strongest event is opaque */
    int legend;         /* draw a write/read legend above (1); it shows only
                         * the ops drawn, and the weight-to-opacity mapping */
    viz_rgb write_rgb;  /* VIZ_WRITE_RGB (Okabe-Ito vermilion) */
    viz_rgb read_rgb;   /* VIZ_READ_RGB (Okabe-Ito blue) */
    const char *ylabel; /* y-axis title ("slot (after CAPE)") */
    int x_title;        /* draw the x-axis title (1); a grid sets it on its */
    int y_title;        /* bottom row and left column only (1) */
} viz_trace_style;

/* The paper's palette (writes red, reads green) instead of the default. */
void viz_trace_style_paper(viz_trace_style *st);

/* Tokens per raster column of a panel of np positions drawn over `extent`
 * px (1 when every token gets at least one column): when above 1 the
 * panel bins tokens, keeping the strongest access per bin, and its x-axis
 * title says so. */
int64_t viz_trace_bin(cairo_t *cr, int64_t np, double extent);

/* The x-axis title of a panel whose columns hold bin tokens each:
 * "token position", or "token position (BIN tokens per column)" when bin
 * > 1. */
void viz_trace_xtitle(char *buf, size_t n, int64_t bin);

void viz_trace_style_default(viz_trace_style *st);

/* Plot area of a panel drawn in r (where cell (pos, slot) lands). */
viz_rect viz_trace_area(viz_rect r, const viz_trace_data *d, const viz_trace_style *st);

/* Page rectangle of cell (pos, slot) inside the plot area. */
viz_rect viz_trace_cell(viz_rect area, const viz_trace_data *d, int64_t pos, int64_t slot);

/* Draw one panel into r.  Events outside the panel's ranges are skipped.
 * RN_EINPUT for an empty range, RN_ENOMEM. */
int viz_trace_draw(cairo_t *cr, viz_rect r, const viz_trace_data *d, const viz_trace_style *st,
                   rn_error *err);

/* Draw n panels in a grid of `cols` columns (0: about square) inside r with
 * one shared legend on top; axis titles on the bottom row and left column
 * only.  Returns the rectangle each panel got in
 * cells[i] when cells is not NULL. */
int viz_trace_grid_draw(cairo_t *cr, viz_rect r, const viz_trace_data *d, int n, int cols,
                        const viz_trace_style *st, viz_rect *cells, rn_error *err);

/* Columns a grid of n panels uses for `cols` (0 = automatic). */
int viz_grid_cols(int n, int cols);

#endif
