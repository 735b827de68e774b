/* fig_patching.h — the picture of a patching sweep (`ramtrace patch
 * --plot FILE`): a layers x heads matrix of the fraction each head
 * recovers, and, when the sweep restored slots, one row per restored slot
 * beside it.  Not a trace figure: it draws an analysis/an_patch.h result. */
#ifndef FIG_PATCHING_H
#define FIG_PATCHING_H

#include "an_patch.h"
#include "rn_config.h"
#include "rn_error.h"

/* Write the figure to path (.png, .svg or .pdf; atomically). */
int fig_patching(const an_patch_result *r, const rn_config *c, const char *path, rn_error *err);

#endif
