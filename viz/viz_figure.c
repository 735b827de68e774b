/* viz_figure.c — figures from trace databases (viz_figure.h).
 *
 * Each kind is one function: load the selected heads' events, turn them
 * into plot data, size the page, draw, commit.  Everything allocated is
 * kept in a figure context and freed in one place.
 */
#include "viz_figure.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "an_attribute.h"
#include "an_cache.h"
#include "an_reuse.h"
#include "an_stream.h"
#include "tr_reader.h"
#include "tr_writer.h"
#include "viz_attribution.h"
#include "viz_heatmap.h"
#include "viz_mrc.h"
#include "viz_reuse.h"
#include "viz_surface.h"
#include "viz_trace.h"

static const char *const kind_names[] = { "trace", "heatmap", "mrc", "reuse", "attribution" };

int viz_fig_kind_from_name(const char *name)
{
    for (int i = 0; i < 5; i++)
        if (name && !strcmp(name, kind_names[i])) return i;
    return -1;
}

const char *viz_fig_kind_name(int kind)
{
    return kind >= 0 && kind < 5 ? kind_names[kind] : "?";
}

void viz_fig_opts_default(viz_fig_opts *o)
{
    memset(o, 0, sizeof *o);
    o->pos_hi = -1;
    o->dpi = 96;
    o->cmap = VIZ_CMAP_VIRIDIS;
}

/* What every figure needs: the database, the run, its selected heads. */
typedef struct {
    const viz_fig_opts *o;
    tr_db *db;
    tr_run_info run;
    tr_head_info *heads;      /* selected traced heads */
    int n_heads;
    int ops;                  /* VIZ_OPS_* */
    int64_t M;                /* slots */
    int64_t lo, hi;           /* position range */
    double font;
} fig;

static void fig_free(fig *f)
{
    free(f->heads);
    tr_close(f->db);
}

/* Open the database, fetch the run, intersect the traced heads with the
 * --layers/--heads selection and resolve the position range. */
static int fig_open(fig *f, const viz_fig_opts *o, rn_error *err)
{
    memset(f, 0, sizeof *f);
    f->o = o;
    f->font = o->font > 0 ? o->font : VIZ_FONT_SIZE;
    int rc = tr_open_read(o->db_path, &f->db, err);
    if (rc) return rc;
    rc = tr_run_get(f->db, o->run_id, &f->run, err);
    if (rc) return rn_preferr(err, "%s", o->db_path);
    tr_select sel;
    rc = tr_select_parse(&sel, o->layers, o->heads, o->ops, &f->run.cfg, err);
    if (rc) return rc;
    f->ops = sel.ops;
    f->M = rn_config_slots(&f->run.cfg);
    tr_head_info *all;
    int n;
    rc = tr_list_heads(f->db, f->run.run_id, &all, &n, err);
    if (rc) return rc;
    f->heads = all;
    for (int i = 0; i < n; i++)
        if (tr_select_has(&sel, all[i].layer, all[i].head, 0)) f->heads[f->n_heads++] = all[i];
    if (f->n_heads == 0)
        return rn_seterr(err, RN_EINPUT, "%s: run %lld: no traced head matches --layers %s --heads %s",
                         o->db_path, (long long)f->run.run_id, o->layers ? o->layers : "all",
                         o->heads ? o->heads : "all");
    f->lo = o->pos_lo > 0 ? o->pos_lo : 0;
    f->hi = o->pos_hi >= 0 && o->pos_hi < f->run.n_tokens ? o->pos_hi : f->run.n_tokens;
    if (f->hi <= f->lo)
        return rn_seterr(err, RN_EINPUT, "%s: run %lld: empty position range [%lld, %lld) (the run has %lld tokens)",
                         o->db_path, (long long)f->run.run_id, (long long)f->lo, (long long)f->hi,
                         (long long)f->run.n_tokens);
    return RN_OK;
}

/* Events of one head in the position range, as plot accesses. */
static int load_head(fig *f, const tr_head_info *h, int64_t lo, int64_t hi, viz_access **out,
                     size_t *n, rn_error *err)
{
    tr_filter flt = { h->layer, h->head, f->ops == 3 ? -1 : f->ops == 1 ? 0 : 1, lo, hi };
    tr_event *ev;
    int rc = tr_load_events(f->db, f->run.run_id, &flt, &ev, n, err);
    if (rc) return rc;
    *out = malloc(sizeof **out * (*n ? *n : 1));
    if (!*out) {
        free(ev);
        return rn_seterr(err, RN_ENOMEM, "out of memory for %zu events", *n);
    }
    for (size_t i = 0; i < *n; i++)
        (*out)[i] = (viz_access){ ev[i].pos, ev[i].slot, ev[i].weight, ev[i].op };
    free(ev);
    return RN_OK;
}

static double dflt(double v, double d) { return v > 0 ? v : d; }

static void head_title(const fig *f, const tr_head_info *h, char *buf, size_t cap)
{
    snprintf(buf, cap, "layer %d, head %d, CAPE %s", h->layer, h->head, h->cape ? "on" : "off");
    (void)f;
}

static int fig_trace(fig *f, rn_error *err)
{
    int n = f->n_heads, cols = viz_grid_cols(n, f->o->cols), rows = (n + cols - 1) / cols;
    viz_trace_data *d = calloc((size_t)n, sizeof *d);
    viz_access **ev = calloc((size_t)n, sizeof *ev);
    int rc = (!d || !ev) ? rn_seterr(err, RN_ENOMEM, "out of memory") : RN_OK;
    for (int i = 0; i < n && !rc; i++) {
        rc = load_head(f, &f->heads[i], f->lo, f->hi, &ev[i], &d[i].n, err);
        d[i].ev = ev[i];
        d[i].pos_lo = f->lo;
        d[i].pos_hi = f->hi;
        d[i].n_slots = f->M;
        head_title(f, &f->heads[i], d[i].title, sizeof d[i].title);
    }
    if (!rc) {
        viz_surface s;
        double W = dflt(f->o->width, cols * 620.0), H = dflt(f->o->height, rows * 400.0 + 30);
        rc = viz_surface_open(&s, f->o->out_path, W, H, f->o->dpi, err);
        if (!rc) {
            viz_trace_style st;
            viz_trace_style_default(&st);
            st.font = f->font;
            st.show_writes = f->ops & 1;
            st.show_reads = (f->ops & 2) != 0;
            rc = viz_trace_grid_draw(s.cr, viz_rect_make(4, 4, W - 8, H - 8), d, n, cols, &st, NULL, err);
            if (rc) viz_surface_abort(&s);
            else rc = viz_surface_commit(&s, err);
        }
    }
    for (int i = 0; ev && i < n; i++) free(ev[i]);
    free(ev);
    free(d);
    return rc;
}

static int fig_heatmap(fig *f, rn_error *err)
{
    const viz_fig_opts *o = f->o;
    int64_t np = f->hi - f->lo;
    int cols = o->buckets > 0 ? o->buckets : (int)(np < 256 ? np : 256);
    int rows = o->slot_bins > 0 ? o->slot_bins : (int)(f->M < 128 ? f->M : 128);
    if (cols > np) cols = (int)np;
    if (rows > f->M) rows = (int)f->M;
    int grid = o->model || f->n_heads > 1;
    /* grid rows = distinct selected layers, columns = distinct heads */
    int layer_of[RN_MAX_LAYERS], head_of[RN_MAX_HEADS], nl = 0, nh = 0;
    int lidx[RN_MAX_LAYERS], hidx[RN_MAX_HEADS];
    memset(lidx, -1, sizeof lidx);
    memset(hidx, -1, sizeof hidx);
    for (int i = 0; i < f->n_heads; i++) {
        if (lidx[f->heads[i].layer] < 0) { lidx[f->heads[i].layer] = nl; layer_of[nl++] = f->heads[i].layer; }
        if (hidx[f->heads[i].head] < 0) { hidx[f->heads[i].head] = nh; head_of[nh++] = f->heads[i].head; }
    }
    if (!grid) nl = nh = 1;
    int cells = nl * nh;
    viz_heatmap_data *d = calloc((size_t)cells, sizeof *d);
    float *v = calloc((size_t)cells * rows * cols, sizeof *v);
    int rc = (!d || !v) ? rn_seterr(err, RN_ENOMEM, "out of memory for %d heatmaps", cells) : RN_OK;
    for (int c = 0; c < cells && !rc; c++)
        d[c] = (viz_heatmap_data){ rows, cols, v + (size_t)c * rows * cols, (double)f->lo, (double)f->hi,
                                   0, (double)f->M, "" };
    for (int i = 0; i < f->n_heads && !rc; i++) {
        const tr_head_info *h = &f->heads[i];
        int c = grid ? lidx[h->layer] * nh + hidx[h->head] : 0;
        viz_access *ev;
        size_t n;
        rc = load_head(f, h, f->lo, f->hi, &ev, &n, err);
        if (rc) break;
        viz_heatmap_bin(ev, n, f->ops, f->lo, f->hi, f->M, rows, cols, (float *)d[c].v);
        free(ev);
        if (grid) snprintf(d[c].title, sizeof d[c].title, "%s", h->cape ? "CAPE" : "");
        else head_title(f, h, d[c].title, sizeof d[c].title);
    }
    if (!rc) {
        viz_heatmap_style st;
        viz_heatmap_style_default(&st);
        st.font = f->font;
        st.cmap = o->cmap;
        st.log = o->log;
        st.value_label = f->ops == 1 ? "writes" : f->ops == 2 ? "reads" : "accesses";
        st.layer_ids = layer_of;
        st.head_ids = head_of;
        double W = dflt(o->width, grid ? nh * 170.0 + 200 : 860), H = dflt(o->height, grid ? nl * 130.0 + 110 : 520);
        viz_surface s;
        rc = viz_surface_open(&s, o->out_path, W, H, o->dpi, err);
        if (!rc) {
            viz_rect r = viz_rect_make(4, 4, W - 8, H - 8);
            if (grid) {
                char t[256];
                snprintf(t, sizeof t, "%s per slot and time bucket, %s", st.value_label,
                         o->title ? o->title : f->run.name[0] ? f->run.name : "run");
                viz_font(s.cr, f->font * 1.1, 1);
                viz_set_rgb(s.cr, VIZ_INK_RGB);
                viz_text_fit(s.cr, W / 2, 6, t, W - 20, 0.5, 0);
                r = viz_rect_inset(r, 0, f->font * 1.6, 0, 0);
                rc = viz_heatmap_grid_draw(s.cr, r, d, nl, nh, &st, NULL, err);
            } else {
                if (o->title) snprintf(d[0].title, sizeof d[0].title, "%s", o->title);
                rc = viz_heatmap_draw(s.cr, r, &d[0], &st, err);
            }
            if (rc) viz_surface_abort(&s);
            else rc = viz_surface_commit(&s, err);
        }
    }
    free(v);
    free(d);
    return rc;
}

/* All selected events of the run (for the analysis module). */
static int load_all(fig *f, tr_event **ev, size_t *n, rn_error *err)
{
    tr_filter flt = { -1, -1, -1, 0, f->hi };
    if (f->n_heads == 1) { flt.layer = f->heads[0].layer; flt.head = f->heads[0].head; }
    tr_event *all;
    size_t na;
    int rc = tr_load_events(f->db, f->run.run_id, &flt, &all, &na, err);
    if (rc) return rc;
    /* keep the selected heads only */
    size_t k = 0;
    for (size_t i = 0; i < na; i++) {
        int keep = 0;
        for (int h = 0; h < f->n_heads && !keep; h++)
            keep = all[i].layer == f->heads[h].layer && all[i].head == f->heads[h].head;
        if (keep) all[k++] = all[i];
    }
    *ev = all;
    *n = k;
    return RN_OK;
}

static int fig_mrc(fig *f, rn_error *err)
{
    const viz_fig_opts *o = f->o;
    const an_policy *pol[32];
    int np = 0, scope = AN_SCOPE_HEAD;
    int rc = an_policy_parse_list(o->policies ? o->policies : "lru,fifo,clock,arc,opt", pol, 32, &np, err);
    if (rc) return rn_preferr(err, "--policies");
    if (o->scope && (rc = an_scope_parse(o->scope, &scope, err))) return rn_preferr(err, "--scope");
    tr_event *ev = NULL;
    size_t n = 0;
    an_streams ss;
    memset(&ss, 0, sizeof ss);
    rc = load_all(f, &ev, &n, err);
    if (!rc) rc = an_streams_build(ev, n, &f->run.cfg, scope, f->ops, &ss, err);
    free(ev);
    if (rc) return rc;
    if (an_streams_total(&ss) == 0) {
        an_streams_free(&ss);
        return rn_seterr(err, RN_EINPUT, "%s: no accesses in the selection", o->db_path);
    }
    /* capacities: powers of two up to the largest stream's distinct keys */
    uint32_t kmax = an_streams_max_keys(&ss);
    double caps[40];
    int nc = 0;
    for (uint64_t c = 1; nc < 39 && c < kmax; c *= 2) caps[nc++] = (double)c;
    caps[nc++] = kmax;
    double *ys = calloc((size_t)np * nc, sizeof *ys);
    viz_series *series = calloc((size_t)np, sizeof *series);
    uint32_t *nxt = malloc(sizeof *nxt * (an_streams_total(&ss) + 1)), *last = malloc(sizeof *last * ((size_t)kmax + 1));
    if (!ys || !series || !nxt || !last) rc = rn_seterr(err, RN_ENOMEM, "out of memory");
    for (int p = 0; p < np && !rc; p++) {
        for (int c = 0; c < nc && !rc; c++) {
            an_sim_result res = { 0, 0, 0 };
            for (int s = 0; s < ss.n && !rc; s++) {
                if (pol[p]->needs_next) an_next_use(&ss.s[s], nxt, last);
                rc = an_simulate(&ss.s[s], pol[p], (uint64_t)caps[c], 0, pol[p]->needs_next ? nxt : NULL, &res, err);
            }
            ys[(size_t)p * nc + c] = an_hit_ratio(&res);
        }
        series[p] = (viz_series){ pol[p]->name, (size_t)nc, caps, ys + (size_t)p * nc };
    }
    if (!rc) {
        viz_mrc_data d = { np, series, "", o->log };
        snprintf(d.title, sizeof d.title, "%s", o->title ? o->title : "");
        if (!o->title)
            snprintf(d.title, sizeof d.title, "hit ratio per %s cache, %d stream%s, %zu accesses",
                     an_scope_name(scope), ss.n, ss.n == 1 ? "" : "s", an_streams_total(&ss));
        double W = dflt(o->width, 800), H = dflt(o->height, 520);
        viz_surface s;
        rc = viz_surface_open(&s, o->out_path, W, H, o->dpi, err);
        if (!rc) {
            rc = viz_mrc_draw(s.cr, viz_rect_make(4, 4, W - 8, H - 8), &d, f->font, err);
            if (rc) viz_surface_abort(&s);
            else rc = viz_surface_commit(&s, err);
        }
    }
    free(ys); free(series); free(nxt); free(last);
    an_streams_free(&ss);
    return rc;
}

static int fig_reuse(fig *f, rn_error *err)
{
    const viz_fig_opts *o = f->o;
    int scope = AN_SCOPE_HEAD, rc;
    if (o->scope && (rc = an_scope_parse(o->scope, &scope, err))) return rn_preferr(err, "--scope");
    tr_event *ev = NULL;
    size_t n = 0;
    an_streams ss;
    memset(&ss, 0, sizeof ss);
    rc = load_all(f, &ev, &n, err);
    if (!rc) rc = an_streams_build(ev, n, &f->run.cfg, scope, f->ops, &ss, err);
    free(ev);
    if (rc) return rc;
    size_t total = an_streams_total(&ss);
    uint32_t *val = malloc(sizeof *val * (total + 1));
    an_hist hist[2];
    memset(hist, 0, sizeof hist);
    if (!val) rc = rn_seterr(err, RN_ENOMEM, "out of memory");
    for (int s = 0; s < ss.n && !rc; s++)
        for (int m = 0; m < 2 && !rc; m++) {
            an_hist h;
            rc = m == 0 ? an_reuse_times(&ss.s[s], val, err) : an_stack_distances(&ss.s[s], val, err);
            if (rc) break;
            an_hist_build(&h, val, ss.s[s].n, NULL);
            for (int b = 0; b < h.n_bins; b++) {
                hist[m].count[b] += h.count[b];
                hist[m].lo[b] = h.lo[b];
                hist[m].hi[b] = h.hi[b];
            }
            if (h.n_bins > hist[m].n_bins) hist[m].n_bins = h.n_bins;
            hist[m].total += h.total;
            hist[m].cold += h.cold;
        }
    free(val);
    int n_streams = ss.n;
    an_streams_free(&ss);
    if (rc) return rc;
    double lo[2][AN_HIST_BINS], hi[2][AN_HIST_BINS], cnt[2][AN_HIST_BINS];
    viz_hist_data d[2];
    const char *names[2] = { "reuse time (tokens)", "stack distance (slots)" };
    for (int m = 0; m < 2; m++) {
        for (int b = 0; b < hist[m].n_bins; b++) {
            lo[m][b] = (double)hist[m].lo[b];
            hi[m][b] = (double)hist[m].hi[b];
            cnt[m][b] = (double)hist[m].count[b];
        }
        d[m] = (viz_hist_data){ names[m], hist[m].n_bins, lo[m], hi[m], cnt[m], (double)hist[m].cold };
    }
    double W = dflt(o->width, 1000), H = dflt(o->height, 720);
    viz_surface s;
    rc = viz_surface_open(&s, o->out_path, W, H, o->dpi, err);
    if (!rc) {
        viz_rect r = viz_rect_make(4, 4, W - 8, H - 8);
        char t[256];
        snprintf(t, sizeof t, "%s", o->title ? o->title : "");
        if (!o->title)
            snprintf(t, sizeof t, "slot reuse per %s, %d stream%s", an_scope_name(scope), n_streams,
                     n_streams == 1 ? "" : "s");
        viz_font(s.cr, f->font * 1.15, 1);
        viz_set_rgb(s.cr, VIZ_INK_RGB);
        viz_text_fit(s.cr, W / 2, 6, t, W - 20, 0.5, 0);
        r = viz_rect_inset(r, 0, f->font * 1.8, 0, 0);
        rc = viz_reuse_draw(s.cr, r, d, 2, f->font, NULL, err);
        if (rc) viz_surface_abort(&s);
        else rc = viz_surface_commit(&s, err);
    }
    return rc;
}

static int fig_attribution(fig *f, rn_error *err)
{
    const viz_fig_opts *o = f->o;
    if (f->n_heads != 1)
        return rn_seterr(err, RN_EINPUT, "attribution: select exactly one head with --layers L --heads H (%d selected)",
                         f->n_heads);
    const tr_head_info *h = &f->heads[0];
    /* attribution needs the memory's whole history: load from position 0 */
    int64_t hi = f->hi, lo = f->lo;
    if (o->pos_hi < 0 && hi - lo > 48) hi = lo + 48;
    tr_filter flt = { h->layer, h->head, -1, 0, hi };
    tr_event *ev;
    size_t n;
    int rc = tr_load_events(f->db, f->run.run_id, &flt, &ev, &n, err);
    if (rc) return rc;
    an_matrix m;
    rc = an_attribute_matrix_range(ev, n, f->M, f->run.cfg.gamma, f->run.cfg.eps, lo, hi, 4096, &m, err);
    free(ev);
    if (rc) return rc;
    tr_token *tok = NULL;
    int64_t ntok = 0;
    rc = tr_load_tokens(f->db, f->run.run_id, &tok, &ntok, err);
    /* the sub-matrix of positions in [lo, hi) */
    int64_t first = 0, k = 0;
    while (first < m.n && m.pos[first] < lo) first++;
    while (first + k < m.n && m.pos[first + k] < hi) k++;
    double *v = malloc(sizeof *v * (size_t)(k * k + 1));
    const char **labels = calloc((size_t)k + 1, sizeof *labels);
    char (*buf)[40] = calloc((size_t)k + 1, sizeof *buf);
    if (!rc && (!v || !labels || !buf)) rc = rn_seterr(err, RN_ENOMEM, "out of memory");
    if (!rc && k == 0) rc = rn_seterr(err, RN_EINPUT, "%s: no positions with events in [%lld, %lld)", o->db_path, (long long)lo, (long long)hi);
    if (!rc) {
        for (int64_t i = 0; i < k; i++) {
            for (int64_t j = 0; j < k; j++) v[i * k + j] = m.values[(first + i) * m.n + first + j];
            int32_t p = m.pos[first + i];
            const char *piece = NULL;
            for (int64_t t = 0; t < ntok; t++)
                if (tok[t].pos == p) { piece = tok[t].piece; break; }
            snprintf(buf[i], sizeof buf[i], "%d %s", p, piece ? piece : "");
            labels[i] = buf[i];
        }
        viz_matrix_data d = { (int)k, (int)k, v, labels, labels, "", "attribution" };
        if (o->title) snprintf(d.title, sizeof d.title, "%s", o->title);
        else snprintf(d.title, sizeof d.title, "attribution, layer %d, head %d, CAPE %s", h->layer, h->head, h->cape ? "on" : "off");
        double W = dflt(o->width, 860), H = dflt(o->height, 800);
        viz_surface s;
        rc = viz_surface_open(&s, o->out_path, W, H, o->dpi, err);
        if (!rc) {
            rc = viz_matrix_draw(s.cr, viz_rect_make(4, 4, W - 8, H - 8), &d, o->cmap, f->font, err);
            if (rc) viz_surface_abort(&s);
            else rc = viz_surface_commit(&s, err);
        }
    }
    free(v); free(labels); free(buf); free(tok);
    an_matrix_free(&m);
    return rc;
}

int viz_figure(const viz_fig_opts *o, rn_error *err)
{
    viz_format fmt;
    /* check the output name before any work */
    int rc = viz_format_from_path(o->out_path, &fmt, err);
    if (rc) return rc;
    fig f;
    rc = fig_open(&f, o, err);
    if (!rc) switch (o->kind) {
        case VIZ_FIG_TRACE: rc = fig_trace(&f, err); break;
        case VIZ_FIG_HEATMAP: rc = fig_heatmap(&f, err); break;
        case VIZ_FIG_MRC: rc = fig_mrc(&f, err); break;
        case VIZ_FIG_REUSE: rc = fig_reuse(&f, err); break;
        case VIZ_FIG_ATTRIBUTION: rc = fig_attribution(&f, err); break;
        default: rc = rn_seterr(err, RN_EINPUT, "unknown plot kind %d", o->kind);
        }
    fig_free(&f);
    return rc;
}
