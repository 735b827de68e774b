/* rn_train.c — training forward with saved activations, cross-entropy and
 * the backward pass over the whole model (see rn_train.h).  Each layer's
 * math lives in its own file (rn_rmsnorm.c, rn_matmul.c, rn_swiglu.c,
 * rn_address.c, rn_pdma.c); this file sequences them like forward_rows in
 * rn_runtime.c and carves all buffers from one allocation. */
#include "rn_train.h"

#include <assert.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_layers.h"
#include "rn_memlimit.h"
#include "rn_threads.h"

/* exp in the working precision (expf in float builds: the softmax over the
 * vocabulary is the hottest loop of the loss). */
#ifdef RN_DOUBLE
#define REXP exp
#else
#define REXP expf
#endif

/* Saved activations of one layer; n = rows. */
typedef struct {
    rn_real *x;            /* [n,D] layer input (residual stream) */
    rn_real *h1, *rstd1;   /* [n,D], [n] attention RMSNorm out / 1/rms */
    rn_real *q, *k;        /* [n,H·dk] raw (before α) */
    rn_real *v, *o;        /* [n,H·dv] */
    uint32_t *raddr, *rslot, *waddr, *wslot; /* [n,H,Kr] reads, [n,H,K] writes */
    rn_real *rw, *ww;      /* [n,H,Kr], [n,H,K] */
    rn_real *wsave, *rsave; /* [B,H,T,K,dv+1], [B,H,T,Kr,dv+1] PDMA saves */
    rn_real *xm;           /* [n,D] after attention residual */
    rn_real *h2, *rstd2;   /* [n,D], [n] */
    rn_real *g, *u, *a;    /* [n,F] gate, up, silu(g)·u */
} layer_acts;

struct rn_trainer {
    const rn_model *m;
    rn_config c;
    int64_t M;
    int max_rows, max_lab, nthreads;
    int fwd_only;               /* rn_trainer_create_eval: no backward (one set of layer
                                 * activations, no gradients) */
    int lab_block;              /* labelled rows whose logits are formed at a time */
    int Kr;                     /* top-K of the reads (c.top_k: of the writes) */
    int lk[RN_MAX_LAYERS], lkr[RN_MAX_LAYERS]; /* per layer: K of the writes and reads
                                * (<= c.top_k and Kr, which size the buffers) */
    double eps_g;
    int B, T, n_lab;
    double loss_sum;
    layer_acts la[RN_MAX_LAYERS];
    rn_real *xf, *hf, *rstdf;   /* [n,D], [n,D], [n] final */
    rn_real *hsel;              /* [max_lab, D] labelled rows of hf */
    rn_real *logits;            /* [max_lab, V] */
    int *lab_rows, *lab_tgt, *tokens;
    rn_real *lse;               /* [max_lab] log-sum-exp of each labelled row */
    uint8_t *correct;
    /* backward scratch */
    rn_real *dres, *dh, *dq, *dk, *dv, *dout, *dg, *du, *da, *dww, *drw, *dhsel;
    /* per-thread: dense PDMA state / gradient accumulators, log-prob scratch */
    rn_real *Sz, *dSz;
    double *lp;
    rn_decode_ws **ws;
    /* gradient block, same layout as the parameters */
    rn_real *grad;
    rn_weights gw;
    int64_t n_block;
    void *mem;
    size_t bytes;              /* size of mem */
};

static size_t al64(size_t n) { return (n + 63) & ~(size_t)63; }

/* Carving helper: with base == NULL only counts bytes. */
typedef struct { char *base; size_t off; } carver;
static void *take(carver *cv, size_t bytes)
{
    void *p = cv->base ? cv->base + cv->off : NULL;
    cv->off += al64(bytes);
    return p;
}

/* Carve every buffer.  A forward-only trainer keeps one layer's
 * activations, which every layer overwrites in turn, and two residual
 * streams in alternation (layer l reads la[l].x and writes la[l+1].x, the
 * last one xf); it has no backward scratch or gradients, and room for the
 * logits of lab_block labelled rows. */
static void carve_all(rn_trainer *tr, carver *cv)
{
    const rn_config *c = &tr->c;
    const size_t n = (size_t)tr->max_rows, D = c->d_model, H = c->n_heads, F = c->d_ff;
    const size_t K = c->top_k, Kr = tr->Kr, dv = c->d_v, hdk = H * rn_config_dk(c), hdv = H * dv;
    const size_t R = sizeof(rn_real), NL = (size_t)tr->max_lab, V = c->vocab_size, LB = (size_t)tr->lab_block;
    const size_t nt = (size_t)tr->nthreads, M = (size_t)tr->M;
    rn_real *xs[2] = { NULL, NULL };
    if (tr->fwd_only) {
        xs[0] = take(cv, R * n * D);
        xs[1] = take(cv, R * n * D);
    }
    for (int l = 0; l < c->n_layers; l++) {
        layer_acts *a = &tr->la[l];
        if (tr->fwd_only && l > 0) *a = tr->la[0];
        a->x = tr->fwd_only ? xs[l % 2] : take(cv, R * n * D);
        if (tr->fwd_only && l > 0) continue;
        a->h1 = take(cv, R * n * D); a->rstd1 = take(cv, R * n);
        a->q = take(cv, R * n * hdk); a->k = take(cv, R * n * hdk);
        a->v = take(cv, R * n * hdv); a->o = take(cv, R * n * hdv);
        a->raddr = take(cv, 4 * n * H * Kr); a->rslot = take(cv, 4 * n * H * Kr);
        a->waddr = take(cv, 4 * n * H * K); a->wslot = take(cv, 4 * n * H * K);
        a->rw = take(cv, R * n * H * Kr); a->ww = take(cv, R * n * H * K);
        a->wsave = take(cv, R * n * H * K * (dv + 1)); a->rsave = take(cv, R * n * H * Kr * (dv + 1));
        a->xm = take(cv, R * n * D); a->h2 = take(cv, R * n * D); a->rstd2 = take(cv, R * n);
        a->g = take(cv, R * n * F); a->u = take(cv, R * n * F); a->a = take(cv, R * n * F);
    }
    tr->xf = tr->fwd_only ? xs[c->n_layers % 2] : take(cv, R * n * D);
    tr->hf = take(cv, R * n * D); tr->rstdf = take(cv, R * n);
    tr->hsel = take(cv, R * LB * D); tr->logits = take(cv, R * LB * V);
    tr->lab_rows = take(cv, sizeof(int) * NL); tr->lab_tgt = take(cv, sizeof(int) * NL);
    tr->tokens = take(cv, sizeof(int) * n);
    tr->lse = take(cv, sizeof(rn_real) * NL);
    tr->correct = take(cv, NL);
    tr->Sz = take(cv, R * nt * M * (dv + 1));
    tr->lp = take(cv, sizeof(double) * nt * (size_t)rn_config_dk(c));
    tr->ws = take(cv, sizeof(rn_decode_ws *) * nt);
    const int kmax = c->top_k > tr->Kr ? c->top_k : tr->Kr;
    size_t wsb = al64(rn_decode_ws_bytes(c->order, c->d_p, kmax));
    char *wsm = take(cv, wsb * nt);
    if (cv->base)
        for (size_t t = 0; t < nt; t++)
            tr->ws[t] = rn_decode_ws_init(wsm + t * wsb, c->order, c->d_p, kmax);
    if (tr->fwd_only) return;
    tr->dres = take(cv, R * n * D); tr->dh = take(cv, R * n * D);
    tr->dq = take(cv, R * n * hdk); tr->dk = take(cv, R * n * hdk);
    tr->dv = take(cv, R * n * hdv); tr->dout = take(cv, R * n * hdv);
    tr->dg = take(cv, R * n * F); tr->du = take(cv, R * n * F); tr->da = take(cv, R * n * F);
    tr->dww = take(cv, R * n * H * K); tr->drw = take(cv, R * n * H * Kr);
    tr->dhsel = take(cv, R * NL * D);
    tr->dSz = take(cv, R * nt * M * (dv + 1));
    tr->grad = take(cv, R * (size_t)tr->n_block);
}

/* Logits formed at a time by a forward-only trainer: labelled rows. */
#define EVAL_LAB_BLOCK 8192

/* rn_trainer_create_kr, or forward only (rn_trainer_create_eval). */
static int create(rn_trainer **out, const rn_model *m, int max_rows, int max_lab, double eps_g, int read_k,
                  int fwd_only, rn_error *err)
{
    *out = NULL;
    if (read_k < 0 || read_k > rn_config_slots(&m->cfg) || read_k > RN_MAX_TOPK)
        return rn_seterr(err, RN_EINPUT, "trainer: read top-K %d is outside [1, min(M, %d)]", read_k, RN_MAX_TOPK);
    if (max_rows < 1 || max_lab < 1)
        return rn_seterr(err, RN_EINPUT, "trainer: batch must have at least one row and one label");
    if (!(eps_g >= 0 && eps_g < 1))
        return rn_seterr(err, RN_EINPUT, "eps_g must be in [0, 1) (got %g)", eps_g);
    rn_trainer *tr = calloc(1, sizeof *tr);
    if (!tr) return rn_seterr(err, RN_ENOMEM, "out of memory");
    tr->m = m;
    tr->c = m->cfg;
    tr->M = rn_config_slots(&m->cfg);
    tr->max_rows = max_rows;
    tr->max_lab = max_lab < max_rows ? max_lab : max_rows;
    tr->fwd_only = fwd_only;
    tr->lab_block = fwd_only && tr->max_lab > EVAL_LAB_BLOCK ? EVAL_LAB_BLOCK : tr->max_lab;
    tr->nthreads = rn_threads_max(); /* the thread count may change later (rn_threads.h) */
    tr->Kr = read_k ? read_k : m->cfg.top_k;
    for (int l = 0; l < RN_MAX_LAYERS; l++) {
        tr->lk[l] = m->cfg.top_k;
        tr->lkr[l] = tr->Kr;
    }
    tr->eps_g = eps_g;
    tr->n_block = m->n_block;
    /* Bound the workspace by the memory limit (rn_memlimit.h) twice: first
     * an estimate in double (per-layer activations and PDMA saves, the
     * per-thread dense state and gradient, logits, gradient block), so the
     * byte counts carve_all forms cannot wrap around size_t; then the exact
     * count of the carving. */
    char what[128];
    snprintf(what, sizeof what, "%s workspace (%d rows, %d threads, M = %lld slots)",
             fwd_only ? "evaluation" : "training", max_rows, tr->nthreads, (long long)tr->M);
    const rn_config *c = &tr->c;
    double n = max_rows, H = c->n_heads, K = (c->top_k + tr->Kr) / 2.0, dv1 = c->d_v + 1.0;
    double widths = 5.0 * c->d_model + 2.0 * H * rn_config_dk(c) + 2.0 * H * c->d_v + 3.0 * c->d_ff + 2;
    double floats = (fwd_only ? 1.0 : (double)c->n_layers) * n * (widths + H * K * (2 * dv1 + 4)) +
                    (fwd_only ? 2.0 * n * c->d_model : 0.0) +
                    (fwd_only ? 1.0 : 2.0) * tr->nthreads * (double)tr->M * dv1 +
                    (double)tr->lab_block * c->vocab_size + (fwd_only ? 0.0 : (double)tr->n_block);
    int rc = rn_memlimit_check(what, floats * sizeof(rn_real), err);
    if (rc) {
        free(tr);
        return rc;
    }
    carver cv = { NULL, 0 };
    carve_all(tr, &cv);
    if ((rc = rn_memlimit_check(what, (double)cv.off, err))) {
        free(tr);
        return rc;
    }
    tr->mem = aligned_alloc(64, cv.off);
    if (!tr->mem) {
        free(tr);
        return rn_seterr(err, RN_ENOMEM, "out of memory allocating %zu bytes of training state", cv.off);
    }
    const size_t bytes = cv.off;
    tr->bytes = bytes;
    cv.base = tr->mem;
    cv.off = 0;
    carve_all(tr, &cv);
    assert(cv.off == bytes); /* the carving takes what the counting pass measured */
    if (!fwd_only) {
        memset(tr->grad, 0, sizeof(rn_real) * (size_t)tr->n_block);
        rn_weights_carve(&tr->c, tr->grad, &tr->gw);
    }
    /* Dense PDMA state per thread starts reset; accumulators start at zero. */
    size_t per = (size_t)tr->M * (tr->c.d_v + 1);
    for (int t = 0; t < tr->nthreads; t++) {
        rn_pdma_reset(tr->Sz + t * per, tr->Sz + t * per + (size_t)tr->M * tr->c.d_v, tr->M, tr->c.d_v);
        if (!fwd_only) memset(tr->dSz + t * per, 0, sizeof(rn_real) * per);
    }
    *out = tr;
    return RN_OK;
}

int rn_trainer_create(rn_trainer **out, const rn_model *m, int max_rows, int max_lab,
                      double eps_g, rn_error *err)
{
    return create(out, m, max_rows, max_lab, eps_g, 0, 0, err);
}

int rn_trainer_create_kr(rn_trainer **out, const rn_model *m, int max_rows, int max_lab,
                         double eps_g, int read_k, rn_error *err)
{
    return create(out, m, max_rows, max_lab, eps_g, read_k, 0, err);
}

int rn_trainer_create_eval(rn_trainer **out, const rn_model *m, int max_rows, int max_lab, rn_error *err)
{
    return create(out, m, max_rows, max_lab, 0.0, 0, 1, err);
}

size_t rn_trainer_bytes(const rn_trainer *tr) { return tr->bytes; }

void rn_trainer_free(rn_trainer *tr)
{
    if (!tr) return;
    free(tr->mem);
    free(tr);
}

rn_real *rn_trainer_grads(rn_trainer *tr) { return tr->grad; }
void rn_trainer_zero_grads(rn_trainer *tr)
{
    if (tr->grad) memset(tr->grad, 0, sizeof(rn_real) * (size_t)tr->n_block);
}
int rn_trainer_n_labelled(const rn_trainer *tr) { return tr->n_lab; }
const int *rn_trainer_label_rows(const rn_trainer *tr) { return tr->lab_rows; }
const rn_real *rn_trainer_logits(const rn_trainer *tr) { return tr->logits; }
const uint8_t *rn_trainer_correct(const rn_trainer *tr) { return tr->correct; }
double rn_trainer_loss_sum(const rn_trainer *tr) { return tr->loss_sum; }

/* Where the scan of (sequence b, head h), bh = b·H + h, finds its data:
 * element offsets into the [n, H·dv] values (v, o, dv, dout), the
 * [n, H, K] write and [n, H, Kr] read slots and weights (and their
 * gradients), and the [B, H, T, K|Kr, dv+1] PDMA saves.  Row strides are
 * H·dv, H·K and H·Kr. */
typedef struct {
    size_t v, w, r, wsave, rsave;
} scan_offsets;

static scan_offsets scan_at(const rn_trainer *tr, int bh, int K, int Kr)
{
    const int H = tr->c.n_heads, dv = tr->c.d_v, T = tr->T;
    const int b = bh / H, h = bh % H;
    const size_t r0 = (size_t)b * T;
    scan_offsets so;
    so.v = r0 * H * dv + (size_t)h * dv;
    so.w = (r0 * H + h) * K;
    so.r = (r0 * H + h) * Kr;
    so.wsave = ((size_t)b * H + h) * T * K * (dv + 1);
    so.rsave = ((size_t)b * H + h) * T * Kr * (dv + 1);
    return so;
}

/* Threads for the scans: at most the per-thread PDMA states made at create
 * (the OpenMP count may have been raised since). */
static int scan_threads(const rn_trainer *tr)
{
    return omp_get_max_threads() < tr->nthreads ? omp_get_max_threads() : tr->nthreads;
}

/* Memory scan of every (sequence, head) of a layer, in parallel. */
static void pdma_forward(rn_trainer *tr, layer_acts *a)
{
    const rn_config *c = &tr->c;
    const int l = (int)(a - tr->la), H = c->n_heads, K = tr->lk[l], Kr = tr->lkr[l], dv = c->d_v;
    const size_t per = (size_t)tr->M * (dv + 1);
    #pragma omp parallel for schedule(dynamic, 1) num_threads(scan_threads(tr))
    for (int bh = 0; bh < tr->B * H; bh++) {
        assert(omp_get_thread_num() < tr->nthreads); /* a PDMA state per thread */
        rn_real *S = tr->Sz + (size_t)omp_get_thread_num() * per, *z = S + (size_t)tr->M * dv;
        const scan_offsets so = scan_at(tr, bh, K, Kr);
        rn_pdma_train_forward(a->o + so.v, a->wsave + so.wsave, a->rsave + so.rsave, S, z, a->v + so.v,
                              a->wslot + so.w, a->ww + so.w, a->rslot + so.r, a->rw + so.r, tr->T,
                              H * dv, H * K, K, H * Kr, Kr, dv, tr->M, c->gamma, c->eps);
    }
}

/* Reverse scans of every (sequence, head) of a layer, in parallel: dv,
 * dww, drw from dout. */
static void pdma_backward(rn_trainer *tr, layer_acts *a)
{
    const rn_config *c = &tr->c;
    const int l = (int)(a - tr->la), H = c->n_heads, K = tr->lk[l], Kr = tr->lkr[l], dv = c->d_v;
    const size_t per = (size_t)tr->M * (dv + 1);
    #pragma omp parallel for schedule(dynamic, 1) num_threads(scan_threads(tr))
    for (int bh = 0; bh < tr->B * H; bh++) {
        assert(omp_get_thread_num() < tr->nthreads);
        rn_real *dS = tr->dSz + (size_t)omp_get_thread_num() * per, *dz = dS + (size_t)tr->M * dv;
        const scan_offsets so = scan_at(tr, bh, K, Kr);
        rn_pdma_train_backward(tr->dv + so.v, tr->dww + so.w, tr->drw + so.r, dS, dz, tr->dout + so.v,
                               a->wsave + so.wsave, a->rsave + so.rsave, a->v + so.v, a->wslot + so.w,
                               a->ww + so.w, a->rslot + so.r, a->rw + so.r, tr->T, H * dv, H * K, K,
                               H * Kr, Kr, dv, c->gamma, c->eps, (rn_real)tr->eps_g);
    }
}

int rn_trainer_forward(rn_trainer *tr, const int *tokens, const int *targets, int B, int T,
                       double *loss, rn_error *err)
{
    const rn_config *c = &tr->c;
    const rn_weights *w = &tr->m->w;
    const int D = c->d_model, H = c->n_heads, F = c->d_ff, V = c->vocab_size;
    const int hdk = H * rn_config_dk(c), hdv = H * c->d_v;
    if (B < 1 || T < 1 || (int64_t)B * T > tr->max_rows)
        return rn_seterr(err, RN_EINPUT, "trainer: batch %d x %d exceeds the room for %d rows", B, T, tr->max_rows);
    const int n = B * T;
    int nl = 0;
    int rc = rn_train_label_rows(tokens, targets, n, V, tr->max_lab, tr->lab_rows, tr->lab_tgt, &nl, err);
    if (rc) return rc;
    tr->B = B; tr->T = T; tr->n_lab = nl;
    memcpy(tr->tokens, tokens, sizeof(int) * n);
    rn_real *x = tr->la[0].x;
    for (int r = 0; r < n; r++) memcpy(x + (size_t)r * D, w->embed + (size_t)tokens[r] * D, sizeof(rn_real) * D);
    for (int l = 0; l < c->n_layers; l++) {
        layer_acts *a = &tr->la[l];
        const rn_layer_weights *lw = &w->layer[l];
        rn_rmsnorm_forward(a->h1, a->rstd1, a->x, lw->attn_norm, n, D, c->norm_eps);
        rn_matmul_forward(a->q, a->h1, lw->wq, n, D, hdk, 0);
        rn_matmul_forward(a->k, a->h1, lw->wk, n, D, hdk, 0);
        rn_matmul_forward(a->v, a->h1, lw->wv, n, D, hdv, 0);
        rn_address_train_forward(a->raddr, a->rslot, a->rw, a->q, lw->q_alpha, c, tr->lkr[l], c->cape_mask[l], n, T, tr->ws, tr->nthreads);
        rn_address_train_forward(a->waddr, a->wslot, a->ww, a->k, lw->k_alpha, c, tr->lk[l], c->cape_mask[l], n, T, tr->ws, tr->nthreads);
        pdma_forward(tr, a);
        memcpy(a->xm, a->x, sizeof(rn_real) * (size_t)n * D);
        rn_matmul_forward(a->xm, a->o, lw->wo, n, hdv, D, 1);
        rn_rmsnorm_forward(a->h2, a->rstd2, a->xm, lw->mlp_norm, n, D, c->norm_eps);
        rn_matmul_forward(a->g, a->h2, lw->w_gate, n, D, F, 0);
        rn_matmul_forward(a->u, a->h2, lw->w_up, n, D, F, 0);
        rn_swiglu_forward(a->a, a->g, a->u, (int64_t)n * F);
        rn_real *xn = l + 1 < c->n_layers ? tr->la[l + 1].x : tr->xf;
        memcpy(xn, a->xm, sizeof(rn_real) * (size_t)n * D);
        rn_matmul_forward(xn, a->a, lw->w_down, n, F, D, 1);
    }
    rn_rmsnorm_forward(tr->hf, tr->rstdf, tr->xf, w->norm, n, D, c->norm_eps);
    /* the logits of lab_block labelled rows at a time (a training trainer's
     * block is all of them: the backward needs them) */
    double total = 0;
    for (int i0 = 0; i0 < nl; i0 += tr->lab_block) {
        const int nb = nl - i0 < tr->lab_block ? nl - i0 : tr->lab_block;
        for (int i = 0; i < nb; i++)
            memcpy(tr->hsel + (size_t)i * D, tr->hf + (size_t)tr->lab_rows[i0 + i] * D, sizeof(rn_real) * D);
        rn_matmul_forward(tr->logits, tr->hsel, w->lm_head, nb, D, V, 0);
        double part = 0;
        #pragma omp parallel for reduction(+ : part) schedule(static)
        for (int i = i0; i < i0 + nb; i++) {
            const rn_real *lg = tr->logits + (size_t)(i - i0) * V;
            int best = 0;
            double mx = lg[0];
            for (int j = 1; j < V; j++)
                if (lg[j] > mx) { mx = lg[j]; best = j; }
            rn_real m = (rn_real)mx, s = 0;
            for (int j = 0; j < V; j++) s += REXP(lg[j] - m);
            tr->lse[i] = m + (rn_real)log((double)s);
            part += (double)tr->lse[i] - (double)lg[tr->lab_tgt[i]];
            tr->correct[i] = best == tr->lab_tgt[i];
        }
        total += part;
    }
    tr->loss_sum = total;
    *loss = nl ? total / nl : 0;
    return RN_OK;
}

void rn_trainer_backward(rn_trainer *tr, double scale)
{
    assert(!tr->fwd_only); /* rn_trainer_create_eval made it: nothing to go back through */
    const rn_config *c = &tr->c;
    const rn_weights *w = &tr->m->w;
    rn_weights *gw = &tr->gw;
    const int D = c->d_model, H = c->n_heads, F = c->d_ff, V = c->vocab_size;
    const int hdk = H * rn_config_dk(c), hdv = H * c->d_v, dk = rn_config_dk(c);
    const int n = tr->B * tr->T, nl = tr->n_lab;
    memset(tr->dres, 0, sizeof(rn_real) * (size_t)n * D);
    if (nl > 0) {
        /* dlogits = (softmax − onehot)·scale/n_lab, in place. */
        double k = scale / nl;
        #pragma omp parallel for schedule(static)
        for (int i = 0; i < nl; i++) {
            rn_real *lg = tr->logits + (size_t)i * V, l = tr->lse[i], kk = (rn_real)k;
            for (int j = 0; j < V; j++) lg[j] = REXP(lg[j] - l) * kk;
            lg[tr->lab_tgt[i]] -= (rn_real)k;
        }
        rn_matmul_backward(tr->dhsel, gw->lm_head, tr->logits, tr->hsel, w->lm_head, nl, D, V, 0);
        memset(tr->dh, 0, sizeof(rn_real) * (size_t)n * D);
        for (int i = 0; i < nl; i++)
            memcpy(tr->dh + (size_t)tr->lab_rows[i] * D, tr->dhsel + (size_t)i * D, sizeof(rn_real) * D);
        rn_rmsnorm_backward(tr->dres, gw->norm, tr->dh, tr->xf, w->norm, tr->rstdf, n, D);
    }
    for (int l = c->n_layers - 1; l >= 0; l--) {
        layer_acts *a = &tr->la[l];
        const rn_layer_weights *lw = &w->layer[l];
        rn_layer_weights *gl = &gw->layer[l];
        /* MLP: x_out = xm + a·W_downᵀ */
        rn_matmul_backward(tr->da, gl->w_down, tr->dres, a->a, lw->w_down, n, F, D, 0);
        rn_swiglu_backward(tr->dg, tr->du, tr->da, a->g, a->u, (int64_t)n * F);
        rn_matmul_backward(tr->dh, gl->w_gate, tr->dg, a->h2, lw->w_gate, n, D, F, 0);
        rn_matmul_backward(tr->dh, gl->w_up, tr->du, a->h2, lw->w_up, n, D, F, 1);
        rn_rmsnorm_backward(tr->dres, gl->mlp_norm, tr->dh, a->xm, lw->mlp_norm, a->rstd2, n, D);
        /* attention: xm = x + o·W_oᵀ */
        rn_matmul_backward(tr->dout, gl->wo, tr->dres, a->o, lw->wo, n, hdv, D, 0);
        pdma_backward(tr, a);
        rn_address_backward(tr->dq, gl->q_alpha, tr->drw, a->q, a->raddr, a->rw, lw->q_alpha, c, tr->lkr[l], n, tr->lp, tr->nthreads);
        rn_address_backward(tr->dk, gl->k_alpha, tr->dww, a->k, a->waddr, a->ww, lw->k_alpha, c, tr->lk[l], n, tr->lp, tr->nthreads);
        rn_matmul_backward(tr->dh, gl->wq, tr->dq, a->h1, lw->wq, n, D, hdk, 0);
        rn_matmul_backward(tr->dh, gl->wk, tr->dk, a->h1, lw->wk, n, D, hdk, 1);
        rn_matmul_backward(tr->dh, gl->wv, tr->dv, a->h1, lw->wv, n, D, hdv, 1);
        rn_rmsnorm_backward(tr->dres, gl->attn_norm, tr->dh, a->x, lw->attn_norm, a->rstd1, n, D);
    }
    (void)dk;
    for (int r = 0; r < n; r++) {
        rn_real *ge = gw->embed + (size_t)tr->tokens[r] * D;
        const rn_real *d = tr->dres + (size_t)r * D;
        for (int i = 0; i < D; i++) ge[i] += d[i];
    }
}

int rn_trainer_set_layer_k(rn_trainer *tr, int layer, int k, int kr, rn_error *err)
{
    if (layer < 0 || layer >= tr->c.n_layers)
        return rn_seterr(err, RN_EINPUT, "trainer: layer %d is outside [0, %d)", layer, tr->c.n_layers);
    if (k < 1 || k > tr->c.top_k || kr < 1 || kr > tr->Kr)
        return rn_seterr(err, RN_EINPUT, "trainer: layer %d's K %d/%d exceeds the trainer's %d/%d", layer, k, kr,
                         tr->c.top_k, tr->Kr);
    tr->lk[layer] = k;
    tr->lkr[layer] = kr;
    return RN_OK;
}
