/* fig_figure.c — the table of plot kinds (generated from figure/fig_*.c
 * by mk/figure.mk) in plot --help's order, and fig_draw, which opens a
 * trace kind's run before its draw (fig_figure.h). */
#include "fig_figure.h"

#include <stdio.h>
#include <string.h>

#include "fig_ctx.h"
#include "viz_surface.h"

#include "fig_kinds.h" /* generated: fig_kinds[], one entry per fig_kind_NAME */

enum { N_KINDS = (int)(sizeof fig_kinds / sizeof fig_kinds[0]) };

int fig_kind_count(void) { return N_KINDS; }

/* The kind with exactly i kinds before it in --help: a smaller order, or
 * the same order and an earlier place in the table (by name). */
const fig_kind_def *fig_kind_at(int i)
{
    for (int k = 0; k < N_KINDS; k++) {
        int before = 0;
        for (int j = 0; j < N_KINDS; j++)
            before += fig_kinds[j]->order < fig_kinds[k]->order ||
                      (fig_kinds[j]->order == fig_kinds[k]->order && j < k);
        if (before == i) return fig_kinds[k];
    }
    return NULL;
}

const fig_kind_def *fig_kind_find(const char *name)
{
    for (int k = 0; name && k < N_KINDS; k++)
        if (!strcmp(name, fig_kinds[k]->name)) return fig_kinds[k];
    return NULL;
}

void fig_kind_list(char *buf, size_t cap)
{
    size_t n = 0;
    if (cap) buf[0] = 0;
    for (int i = 0; i < N_KINDS && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", fig_kind_at(i)->name);
}

int fig_draw(const fig_opts *o, rn_error *err)
{
    const fig_kind_def *k = o->kind;
    if (!k || !k->draw) return rn_seterr(err, RN_EINPUT, "plot kind %s draws no figure of plot's options",
                                          k ? k->name : "(none)");
    if (k->input == FIG_INPUT_FILE) { /* the kind reads its file itself */
        fig_ctx f = { .o = o };
        return k->draw(&f, err);
    }
    viz_format fmt;
    /* check the output name before any work */
    int rc = viz_format_from_path(o->out_path, &fmt, err);
    if (rc) return rc;
    fig_ctx f;
    rc = fig_ctx_open(&f, o, err);
    if (!rc) rc = k->draw(&f, err);
    fig_ctx_close(&f);
    return rc;
}
