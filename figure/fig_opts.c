/* fig_opts.c — defaults and names of the plot options (fig_opts.h). */
#include "fig_opts.h"

#include <string.h>

void fig_opts_default(fig_opts *o)
{
    memset(o, 0, sizeof *o);
    o->pos_hi = -1;
    o->dpi = 96;
    o->cmap = VIZ_CMAP_VIRIDIS;
}

int fig_palette_from_name(const char *name)
{
    if (name && !strcmp(name, "okabe-ito")) return 0;
    if (name && !strcmp(name, "paper")) return 1;
    return -1;
}
