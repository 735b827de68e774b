/* viz_trace.h — the memory-trace plot (the paper's appendix B figure):
 * x = token position, y = memory slot, writes red and reads green with
 * opacity by weight; one panel per head, several heads in a grid.
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
} viz_trace_data;

typedef struct {
    double font;        /* label size in px (VIZ_FONT_SIZE) */
    int show_writes;    /* draw writes (1) */
    int show_reads;     /* draw reads (1) */
    double min_alpha;   /* opacity of the weakest event (0.25); the panel's
                         * strongest event is opaque */
    int legend;         /* draw a write/read legend above (1) */
} viz_trace_style;

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
 * one shared legend on top.  Returns the rectangle each panel got in
 * cells[i] when cells is not NULL. */
int viz_trace_grid_draw(cairo_t *cr, viz_rect r, const viz_trace_data *d, int n, int cols,
                        const viz_trace_style *st, viz_rect *cells, rn_error *err);

/* Columns a grid of n panels uses for `cols` (0 = automatic). */
int viz_grid_cols(int n, int cols);

#endif
