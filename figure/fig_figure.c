/* fig_figure.c — the figure kinds by name and the dispatch of
 * `ramtrace plot` (fig_figure.h); each kind lives in its own file. */
#include "fig_figure.h"

#include <string.h>

#include "fig_ctx.h"
#include "viz_surface.h"

static const char *const kind_names[FIG_N_KINDS] = { "trace", "heatmap", "mrc", "reuse", "attribution" };

int fig_kind_from_name(const char *name)
{
    for (int i = 0; i < FIG_N_KINDS; i++)
        if (name && !strcmp(name, kind_names[i])) return i;
    return -1;
}

const char *fig_kind_name(int kind)
{
    return kind >= 0 && kind < FIG_N_KINDS ? kind_names[kind] : "?";
}

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

int fig_draw(const fig_opts *o, rn_error *err)
{
    static int (*const draw[FIG_N_KINDS])(fig_ctx *, rn_error *) = {
        fig_trace, fig_heatmap, fig_mrc, fig_reuse, fig_attribution
    };
    if (o->kind < 0 || o->kind >= FIG_N_KINDS) return rn_seterr(err, RN_EINPUT, "unknown plot kind %d", o->kind);
    viz_format fmt;
    /* check the output name before any work */
    int rc = viz_format_from_path(o->out_path, &fmt, err);
    if (rc) return rc;
    fig_ctx f;
    rc = fig_ctx_open(&f, o, err);
    if (!rc) rc = draw[o->kind](&f, err);
    fig_ctx_close(&f);
    return rc;
}
