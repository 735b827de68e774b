/* fig_figure.c — the figure kinds by name and the dispatch of
 * `ramtrace plot` (fig_figure.h); each kind lives in its own file. */
#include "fig_figure.h"

#include <stdio.h>
#include <string.h>

#include "fig_ctx.h"
#include "viz_surface.h"

static const fig_kind_entry kinds[] = {
    { "trace", "memory slot x token position, writes vermilion, reads blue\n"
               "(opacity by weight), one panel per selected head" },
    { "heatmap", "access counts per slot bin and time bucket; one head, or with\n"
                 "--model (or several heads selected) a layers x heads grid" },
    { "mrc", "hit ratio against cache capacity for several policies" },
    { "reuse", "reuse-time and stack-distance histograms and CDFs" },
    { "attribution", "one head's token x token attribution matrix" },
    { "tiered", "the tiered state's tokens/s against its budget, beside the\n"
                "disk's read-rate bound: ramtrace plot tiered BENCH.csv -o FILE\n"
                "(the CSV of scripts/bench-tiered; docs/tiered-state.md)" },
    { "patching", "a patching sweep: ramtrace plot patching MODEL CLEAN CORRUPT\n"
                  "--answer TOKEN -o FILE (the figure of ramtrace patch)" },
    { "frontier", "MQAR accuracy against total and active state, RAM-Net beside\n"
                  "published baselines: ramtrace plot frontier --csv RESULTS.csv\n"
                  "[--anchors BASELINES.csv] -o FILE (docs/mqar-frontier.md)" },
    { "scaling", "MQAR accuracy against order U and slots M over seeds:\n"
                 "ramtrace plot scaling --csv RESULTS.csv -o FILE" },
};

int fig_kind_count(void) { return (int)(sizeof kinds / sizeof kinds[0]); }

const fig_kind_entry *fig_kind_at(int i) { return i >= 0 && i < fig_kind_count() ? &kinds[i] : NULL; }

void fig_kind_list(char *buf, size_t cap)
{
    size_t n = 0;
    if (cap) buf[0] = 0;
    for (int i = 0; i < fig_kind_count() && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", kinds[i].name);
}

/* The first FIG_N_KINDS entries are the fig_kind values, in order. */
int fig_kind_from_name(const char *name)
{
    for (int i = 0; i < FIG_N_KINDS; i++)
        if (name && !strcmp(name, kinds[i].name)) return i;
    return -1;
}

const char *fig_kind_name(int kind)
{
    return kind >= 0 && kind < FIG_N_KINDS ? kinds[kind].name : "?";
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
