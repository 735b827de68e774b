/* fig_figure.h — whole figures of a traced run, written to a file: the
 * logic behind `ramtrace plot KIND trace.db -o FILE`.
 *
 * figure/ is the one place that joins analysis to drawing.  A figure opens
 * the run through analysis/an_load.h (so it refuses what every analysis
 * refuses: a missing run, a run still being written), computes what it
 * shows with analysis/ (streams, the simulation grid, reuse histograms,
 * attribution), fills the plain data structs of viz/ and draws them into a
 * viz_surface (PNG, SVG or PDF by extension, written atomically).  viz/
 * itself knows nothing of traces or analysis.
 */
#ifndef FIG_FIGURE_H
#define FIG_FIGURE_H

#include <stdint.h>

#include "fig_opts.h"
#include "rn_error.h"

typedef enum { FIG_TRACE = 0, FIG_HEATMAP, FIG_MRC, FIG_REUSE, FIG_ATTRIBUTION, FIG_N_KINDS } fig_kind;

/* Parse "trace", "heatmap", "mrc", "reuse", "attribution"; -1 if unknown. */
int fig_kind_from_name(const char *name);
const char *fig_kind_name(int kind);

/* The registry of every kind `ramtrace plot` draws, in the order its help
 * lists them: the kinds of a traced run (fig_kind, drawn by fig_draw)
 * first, then those of other inputs (a benchmark CSV, a model's patching
 * sweep, an MQAR results CSV).  plot --help, its errors and the bash
 * completion (scripts/gen-completion reads --help) all come from it. */
typedef struct {
    const char *name;
    const char *help; /* its lines in plot --help, '\n'-separated, unindented */
} fig_kind_entry;
int fig_kind_count(void);
const fig_kind_entry *fig_kind_at(int i);
/* The names, "trace, heatmap, ..." (truncated to cap). */
void fig_kind_list(char *buf, size_t cap);

/* Draw the figure into o->out_path.  RN_EINPUT (message naming the file or
 * option) for a bad database, run, selection or output path, RN_EINTR when
 * o->progress asked to stop; nothing is written on error. */
int fig_draw(const fig_opts *o, rn_error *err);

#endif
