/* fig_mrc.c — `plot mrc`: hit ratio against cache capacity per policy.
 * The numbers are analysis/an_simrun.h's simulation grid over the capacity
 * sweep, the same computation as `ramtrace simulate --sweep` (and the same
 * default scope, one cache for the model).  When LRU is among the policies
 * its exact curve at every capacity (analysis/an_mrc.h) is drawn too, as a
 * thin line through the sweep's points.  The capacity axis names the
 * scope; the top axis gives bytes of state (the simulation's bytes per
 * slot: d_v values and the normaliser, 4 bytes each) and the share of the
 * state one cache serves (M slots per head it covers).
 * With --sample the curves are estimates from the keys sampled at a rate
 * (analysis/an_shards.h: SHARDS for LRU's curve, mini-simulations for the
 * policies), the rate in every legend entry and the title. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "an_cache.h"
#include "an_mrc.h"
#include "an_shards.h"
#include "an_simrun.h"
#include "fig_ctx.h"
#include "fig_figure.h"
#include "viz_mrc.h"

static int draw(fig_ctx *f, rn_error *err);

const fig_kind_def fig_kind_mrc = {
    .name = "mrc", .order = 30, .input = FIG_INPUT_TRACE, .draw = draw,
    .help = "hit ratio against cache capacity for several policies",
};

typedef struct {
    const fig_ctx *f;
    viz_mrc_data d;
} mrc_page;

static int draw_mrc(cairo_t *cr, double W, double H, void *user, rn_error *err)
{
    mrc_page *p = user;
    return viz_mrc_draw(cr, viz_rect_make(4, 4, W - 8, H - 8), &p->d, p->f->font, err);
}

static int draw(fig_ctx *f, rn_error *err)
{
    const fig_opts *o = f->o;
    const rn_policy *pol[32];
    int np = 0, scope;
    int rc = rn_policy_parse_list(o->policies ? o->policies : "lru,fifo,clock,arc,opt", pol, 32, &np, err);
    if (rc) return rn_preferr(err, "--policies");
    an_streams ss;
    if ((rc = fig_load_streams(f, &scope, &ss, err))) return rc;
    if (an_streams_total(&ss) == 0) {
        an_streams_free(&ss);
        return rn_seterr(err, RN_EINPUT, "%s: no accesses in the selection", o->db_path);
    }
    uint64_t caps[40];
    int nc = an_sweep_capacities(&ss, caps, 40);
    an_simgrid g;
    memset(&g, 0, sizeof g);
    double bytes_per_slot = (double)(f->run.run.cfg.d_v + 1) * 4, rate = 0;
    int lru = -1;
    for (int p = 0; p < np; p++)
        if (!strcmp(pol[p]->name, "lru")) lru = p;
    an_mrc exact;
    memset(&exact, 0, sizeof exact);
    if (o->sample.rate > 0) {
        /* sampled: the curve first (a fixed size finds its rate there), then
         * the policies' mini-simulations at that rate */
        an_spill sp = { .fd_key = -1, .fd_next = -1 };
        rc = an_spill_resident(&ss, o->warmup, &sp, err);
        if (!rc) rc = an_shards_mrc(&sp, &o->sample, &exact, &rate, err);
        if (!rc) rc = an_shards_grid(&sp, rate, pol, np, caps, nc, (uint64_t)bytes_per_slot, o->progress,
                                     o->progress_user, &g, err);
        an_spill_free(&sp);
        if (lru < 0) an_mrc_free(&exact);
    } else {
        rc = an_simgrid_run(&ss, pol, np, caps, nc, o->warmup, (uint64_t)bytes_per_slot, o->progress,
                            o->progress_user, &g, err);
        if (!rc && lru >= 0) rc = an_mrc_build(&ss, o->warmup, &exact, err);
    }
    size_t total = an_streams_total(&ss);
    int n_streams = ss.n;
    an_streams_free(&ss);
    if (rc) {
        an_mrc_free(&exact);
        an_simgrid_free(&g);
        return rc;
    }
    int ns = np + (lru >= 0 && exact.n > 0);
    double *xs = malloc(sizeof *xs * (size_t)nc), *ys = malloc(sizeof *ys * (size_t)np * nc);
    double *ex = malloc(sizeof *ex * (size_t)(exact.n + 1));
    viz_series *series = malloc(sizeof *series * (size_t)ns);
    char names[33][64], pct[32] = "";
    if (rate > 0) snprintf(pct, sizeof pct, " (sampled, %.3g%%)", 100 * rate);
    if (!xs || !ys || !ex || !series) rc = rn_seterr(err, RN_ENOMEM, "out of memory");
    for (int p = 0; p < np && !rc; p++) {
        for (int c = 0; c < nc; c++) {
            xs[c] = (double)caps[c];
            ys[(size_t)p * nc + c] = an_hit_ratio(&g.result[p * nc + c]);
        }
        snprintf(names[p], sizeof names[p], "%s%s", pol[p]->name, pct);
        series[p] = (viz_series){ names[p], (size_t)nc, xs, ys + (size_t)p * nc, 0, NULL, NULL };
    }
    if (!rc && ns > np) {
        for (int64_t c = 0; c < exact.n; c++) ex[c] = (double)exact.capacity[c];
        snprintf(names[32], sizeof names[32], "%s", rate > 0 ? "lru, SHARDS curve" : "lru, exact");
        series[np] = (viz_series){ names[32], (size_t)exact.n, ex, exact.hit_ratio, lru + 1, NULL, NULL };
    }
    if (!rc) {
        static const char *const cap_label[] = { "cache capacity (slots per head cache)",
                                                 "cache capacity (slots per layer cache)",
                                                 "cache capacity (slots, one cache for the model)" };
        mrc_page pg = { f, { ns, series, "", o->log, NULL, 0, 0 } };
        pg.d.cap_label = scope >= 0 && scope < 3 ? cap_label[scope] : NULL;
        pg.d.bytes_per_slot = bytes_per_slot;
        pg.d.total_slots = (double)f->M * f->n_heads / (n_streams > 0 ? n_streams : 1);
        if (o->title) snprintf(pg.d.title, sizeof pg.d.title, "%s", o->title);
        else
            snprintf(pg.d.title, sizeof pg.d.title, "hit ratio per %s cache, %d stream%s, %zu accesses%s",
                     rn_scope_name(scope), n_streams, n_streams == 1 ? "" : "s", total, pct);
        rc = fig_render(f, fig_dflt(o->width, 800), fig_dflt(o->height, 560), draw_mrc, &pg, err);
    }
    free(xs); free(ys); free(ex); free(series);
    an_mrc_free(&exact);
    an_simgrid_free(&g);
    return rc;
}
