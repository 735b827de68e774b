/* fig_tiered.h — `ramtrace plot tiered BENCH.csv -o FILE`: the tiered
 * memory state's speed against its budget, from the CSV that
 * scripts/bench-tiered writes, with the speed the disk's measured random-
 * read rate allows for each run's reads beside it (docs/tiered-state.md).
 *
 * The CSV has a header row naming at least the columns budget_bytes,
 * policy, tokens, reads, tok_s_direct, tok_s_direct_noprefetch,
 * tok_s_cache and read_rate; one row per (budget, policy).  Each policy
 * gets a series of its O_DIRECT speed; the first policy also those without
 * read-ahead and through the page cache, and the bound tokens · read_rate /
 * reads (runs with no reads have no bound: drawn without that point).  An
 * optional column `machine` (the CPU model and cores, as bench-tiered
 * writes it) is named under the chart, with the first row's read_rate.
 */
#ifndef FIG_TIERED_H
#define FIG_TIERED_H

#include "rn_error.h"

/* Draw the figure of csv_path into out_path (.png, .svg or .pdf by
 * extension; atomically).  width/height/dpi/font as plot's options (0:
 * defaults).  RN_EINPUT naming the file for a bad CSV or output path. */
int fig_tiered(const char *csv_path, const char *out_path, double width, double height, double dpi,
               double font, const char *title, rn_error *err);

#endif
