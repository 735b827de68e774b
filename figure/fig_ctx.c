/* fig_ctx.c — the shared part of every figure (fig_ctx.h): opening and
 * selecting, loading events, and the page. */
#include "fig_ctx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tr_select.h"
#include "viz_surface.h"

int fig_ctx_open(fig_ctx *f, const fig_opts *o, rn_error *err)
{
    memset(f, 0, sizeof *f);
    f->o = o;
    f->font = o->font > 0 ? o->font : VIZ_FONT_SIZE;
    int rc = an_run_open(o->db_path, o->run_id, &f->run, err);
    if (rc) return rc;
    const tr_run_info *run = &f->run.run;
    tr_select sel;
    rc = tr_select_parse(&sel, o->layers, o->heads, o->ops, &run->cfg, err);
    if (rc) return rc;
    f->ops = sel.ops;
    f->M = f->run.M;
    f->heads = malloc(sizeof *f->heads * (size_t)(f->run.n_heads ? f->run.n_heads : 1));
    if (!f->heads) return rn_seterr(err, RN_ENOMEM, "out of memory");
    for (int i = 0; i < f->run.n_heads; i++)
        if (tr_select_has_head(&sel, f->run.heads[i].layer, f->run.heads[i].head))
            f->heads[f->n_heads++] = f->run.heads[i];
    if (f->n_heads == 0)
        return rn_seterr(err, RN_EINPUT, "%s: run %lld: no traced head matches --layers %s --heads %s",
                         o->db_path, (long long)run->run_id, o->layers ? o->layers : "all",
                         o->heads ? o->heads : "all");
    f->lo = o->pos_lo > 0 ? o->pos_lo : 0;
    f->hi = o->pos_hi >= 0 && o->pos_hi < run->n_tokens ? o->pos_hi : run->n_tokens;
    if (f->hi <= f->lo)
        return rn_seterr(err, RN_EINPUT, "%s: run %lld: empty position range [%lld, %lld) (the run has %lld tokens)",
                         o->db_path, (long long)run->run_id, (long long)f->lo, (long long)f->hi,
                         (long long)run->n_tokens);
    return RN_OK;
}

void fig_ctx_close(fig_ctx *f)
{
    free(f->heads);
    f->heads = NULL;
    an_run_close(&f->run);
}

int fig_load_head(const fig_ctx *f, const tr_head_info *h, viz_access **out, size_t *n, rn_error *err)
{
    tr_event *ev;
    int rc = an_run_load_range(&f->run, h->layer, h->head, f->ops, f->lo, f->hi, &ev, n, err);
    if (rc) return rc;
    *out = malloc(sizeof **out * (*n ? *n : 1));
    if (!*out) {
        free(ev);
        return rn_seterr(err, RN_ENOMEM, "out of memory for %zu events", *n);
    }
    for (size_t i = 0; i < *n; i++)
        (*out)[i] = (viz_access){ ev[i].pos, f->o->addr ? (int64_t)ev[i].addr : ev[i].slot, ev[i].weight, ev[i].op };
    free(ev);
    return RN_OK;
}

/* Keep the events of the selected heads only (ev is in canonical order, so
 * this is a merge walk over both sorted lists). */
static size_t keep_selected(const fig_ctx *f, tr_event *ev, size_t n)
{
    size_t k = 0;
    int h = 0;
    for (size_t i = 0; i < n; i++) {
        while (h < f->n_heads && (f->heads[h].layer < ev[i].layer ||
                                  (f->heads[h].layer == ev[i].layer && f->heads[h].head < ev[i].head)))
            h++;
        if (h < f->n_heads && f->heads[h].layer == ev[i].layer && f->heads[h].head == ev[i].head)
            ev[k++] = ev[i];
    }
    return k;
}

int fig_load_streams(const fig_ctx *f, int *scope, an_streams *ss, rn_error *err)
{
    memset(ss, 0, sizeof *ss);
    *scope = RN_CACHE_SCOPE_MODEL; /* as `ramtrace simulate` */
    int rc;
    if (f->o->scope && (rc = rn_scope_parse("--scope", f->o->scope, scope, err))) return rn_preferr(err, "--scope");
    int one = f->n_heads == 1;
    tr_event *ev = NULL;
    size_t n = 0;
    rc = an_run_load_range(&f->run, one ? f->heads[0].layer : -1, one ? f->heads[0].head : -1, RN_OPS_BOTH,
                           0, f->hi, &ev, &n, err);
    if (rc) return rc;
    n = keep_selected(f, ev, n);
    rc = an_streams_build(ev, n, &f->run.run.cfg, *scope, f->ops, ss, err);
    free(ev);
    return rc;
}

void fig_head_title(const tr_head_info *h, char *buf, size_t cap)
{
    snprintf(buf, cap, "layer %d, head %d, CAPE %s", h->layer, h->head, h->cape ? "on" : "off");
}

int fig_render(const fig_ctx *f, double W, double H, fig_draw_fn draw, void *user, rn_error *err)
{
    viz_surface s;
    int rc = viz_surface_open(&s, f->o->out_path, W, H, f->o->dpi, err);
    if (rc) return rc;
    rc = draw(s.cr, W, H, user, err);
    if (rc) {
        viz_surface_abort(&s);
        return rc;
    }
    return viz_surface_commit(&s, err);
}

void fig_page_title(cairo_t *cr, double W, double size, const char *text)
{
    viz_font(cr, size, 1);
    viz_set_rgb(cr, VIZ_INK_RGB);
    viz_text_fit(cr, W / 2, 6, text, W - 20, 0.5, 0);
}
