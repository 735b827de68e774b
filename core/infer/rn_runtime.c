/* rn_runtime.c — inference: prefill over chunks of rows and the one-token
 * step (see rn_runtime.h).  Float builds only (the probe reports float). */
#include "rn_runtime.h"

#include <assert.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_cuda.h"
#include "rn_gemv.h"
#include "rn_layers.h"
#include "rn_memlimit.h"
#include "rn_state.h"
#include "rn_threads.h"
#include "rn_wbf16.h"

struct rn_runtime {
    const rn_model *m;
    rn_config c;
    int64_t M;
    int chunk;                 /* max rows per forward call */
    int64_t pos;               /* next position */
    const rn_probe *probe;
    rn_probe probe_copy;
    const rn_iv_set *iv;       /* interventions (NULL: none) */
    volatile int *stop;
    rn_state *st;              /* the memory state (rn_state.h): dense or tiered */
    /* activations for `chunk` rows */
    rn_real *x, *hb, *q, *k, *v, *o, *g, *u, *rstd;
    uint32_t *waddr, *wslot, *raddr, *rslot;
    rn_real *ww, *rw;
    /* per-thread decoder workspaces */
    int n_ws;
    rn_decode_ws **ws;
    void *ws_mem;
    void *block;               /* one allocation for all of the above */
    rn_cuda_rt *gpu;           /* set: forward runs on the GPU (rn_runtime_create_on) */
    rn_hooks hooks;            /* rn_runtime_set_hooks (points 0: none) */
    rn_real *ss;               /* the slot-state hook's rows [H, K, d_v + 1], or with
                                * slot_rows [chunk, H, K, d_v + 1] (NULL: not wanted yet) */
    int ss_rows;               /* the rows ss holds */
    rn_precision prec;         /* rn_runtime_set_precision */
    rn_wbf16 *wb;              /* bf16: the matrices the forward reads (NULL in fp32) */
    float *widen;              /* bf16: one matrix widened to FP32 for a prefill chunk's GEMM */
};

static size_t al64(size_t n) { return (n + 63) & ~(size_t)63; }

/* A runtime of model m forwarding up to max_chunk rows a call, with
 * nothing allocated yet (both devices start from it); NULL: out of memory. */
static rn_runtime *runtime_new(const rn_model *m, int max_chunk)
{
    rn_runtime *rt = calloc(1, sizeof *rt);
    if (rt) *rt = (rn_runtime){ .m = m, .c = m->cfg, .M = rn_config_slots(&m->cfg), .chunk = max_chunk };
    return rt;
}

int rn_runtime_create(const rn_model *m, int max_chunk, rn_runtime **out, rn_error *err)
{
    return rn_runtime_create_state(m, max_chunk, NULL, out, err);
}

int rn_runtime_create_state(const rn_model *m, int max_chunk, const rn_state_opts *so,
                            rn_runtime **out, rn_error *err)
{
    *out = NULL;
    if (max_chunk < 1) return rn_seterr(err, RN_EINPUT, "runtime: chunk size must be >= 1");
    int rc = rn_state_check(&m->cfg, so, err);
    if (rc) return rc;
    const rn_config *c = &m->cfg;
    rn_runtime *rt = runtime_new(m, max_chunk);
    if (!rt) return rn_seterr(err, RN_ENOMEM, "out of memory");
    const int64_t L = c->n_layers, H = c->n_heads, D = c->d_model, F = c->d_ff, K = c->top_k;
    const int64_t hdk = H * rn_config_dk(c), hdv = H * c->d_v, C = max_chunk;
    /* Bound the whole allocation by the memory limit (rn_memlimit.h) before
     * forming any size_t product: in double, L·H·M·(d_v+1) can exceed int64
     * for a valid config.  State plus the chunk's activations and addresses
     * and the decoder workspaces, as carved below (to within alignment). */
    rt->n_ws = rn_threads_max(); /* the thread count may change later (rn_threads.h) */
    size_t wsb = al64(rn_decode_ws_bytes(c->order, c->d_p, c->top_k));
    double state = (double)L * H * (double)rt->M * (c->d_v + 1.0);
    double scratch = (double)C * (2.0 * D + 2.0 * hdk + 2.0 * hdv + 2.0 * F + 1 + 6.0 * H * K);
    double need = rn_state_bytes(c, so) + sizeof(rn_real) * scratch +
                  ((double)wsb + sizeof(void *) + 64) * rt->n_ws + 64 * 17;
    char what[200];
    if (so && so->budget)
        snprintf(what, sizeof what, "tiered memory state (budget %llu bytes, a map of %.0f slots) with its scratch",
                 (unsigned long long)so->budget, L * H * (double)rt->M);
    else
        snprintf(what, sizeof what, "model memory state (L*H*M*(d_v+1) = %.0f floats) with its scratch", state);
    rc = rn_memlimit_check(what, need, err);
    if (rc) {
        free(rt);
        return rc;
    }
    size_t sz[] = {
        al64(sizeof(rn_real) * C * D), al64(sizeof(rn_real) * C * D),
        al64(sizeof(rn_real) * C * hdk), al64(sizeof(rn_real) * C * hdk),
        al64(sizeof(rn_real) * C * hdv), al64(sizeof(rn_real) * C * hdv),
        al64(sizeof(rn_real) * C * F), al64(sizeof(rn_real) * C * F), al64(sizeof(rn_real) * C),
        al64(sizeof(uint32_t) * C * H * K), al64(sizeof(uint32_t) * C * H * K),
        al64(sizeof(uint32_t) * C * H * K), al64(sizeof(uint32_t) * C * H * K),
        al64(sizeof(rn_real) * C * H * K), al64(sizeof(rn_real) * C * H * K),
        al64(sizeof(rn_decode_ws *) * rt->n_ws), wsb * rt->n_ws,
    };
    size_t total = 0;
    for (size_t i = 0; i < sizeof sz / sizeof sz[0]; i++) total += sz[i];
    assert((double)total <= need); /* the limit check saw at least this much */
    if ((rc = rn_state_create(c, so, &rt->st, err))) {
        free(rt);
        return rc;
    }
    char *p = aligned_alloc(64, total);
    if (!p) {
        rn_state_free(rt->st);
        free(rt);
        return rn_seterr(err, RN_ENOMEM, "out of memory allocating %zu bytes of runtime state", total);
    }
    rt->block = p;
    int i = 0;
#define CARVE(field, type) rt->field = (type *)p; p += sz[i++];
    CARVE(x, rn_real); CARVE(hb, rn_real); CARVE(q, rn_real); CARVE(k, rn_real);
    CARVE(v, rn_real); CARVE(o, rn_real); CARVE(g, rn_real); CARVE(u, rn_real); CARVE(rstd, rn_real);
    CARVE(waddr, uint32_t); CARVE(wslot, uint32_t); CARVE(raddr, uint32_t); CARVE(rslot, uint32_t);
    CARVE(ww, rn_real); CARVE(rw, rn_real);
    CARVE(ws, rn_decode_ws *);
#undef CARVE
    rt->ws_mem = p;
    for (int t = 0; t < rt->n_ws; t++)
        rt->ws[t] = rn_decode_ws_init(p + (size_t)t * wsb, c->order, c->d_p, c->top_k);
    rn_runtime_reset(rt);
    if (so && so->resume) { /* the sequence a clean state file holds, after the reset */
        int64_t pos = 0;
        if ((rc = rn_state_resume(rt->st, &pos, err))) {
            rn_runtime_free(rt);
            return rc;
        }
        rt->pos = pos;
    }
    *out = rt;
    return RN_OK;
}

int rn_runtime_create_on(const rn_model *m, int max_chunk, rn_device dev, rn_runtime **out,
                         rn_error *err)
{
    *out = NULL;
    if (dev == RN_DEVICE_CPU) return rn_runtime_create(m, max_chunk, out, err);
    int rc = rn_device_check(dev, err);
    if (!rc) rc = rn_cuda_supported(&m->cfg, err);
    if (rc) return rc;
    if (max_chunk < 1) return rn_seterr(err, RN_EINPUT, "runtime: chunk size must be >= 1");
    rn_runtime *rt = runtime_new(m, max_chunk);
    if (!rt) return rn_seterr(err, RN_ENOMEM, "out of memory");
    if ((rc = rn_cuda_rt_create(m, max_chunk, &rt->gpu, err))) {
        free(rt);
        return rc;
    }
    *out = rt;
    return RN_OK;
}

void rn_runtime_free(rn_runtime *rt)
{
    if (!rt) return;
    rn_cuda_rt_free(rt->gpu);
    rn_state_free(rt->st);
    rn_wbf16_free(rt->wb);
    free(rt->widen);
    free(rt->ss);
    free(rt->block);
    free(rt);
}

void rn_runtime_reset(rn_runtime *rt)
{
    if (rt->gpu) {
        rn_error e = { 0 };
        rn_cuda_rt_reset(rt->gpu, &e); /* a failure resurfaces at the next forward */
        rt->pos = 0;
        return;
    }
    rn_state_reset(rt->st); /* a failure resurfaces at the next forward */
    rt->pos = 0;
}

void rn_runtime_set_probe(rn_runtime *rt, const rn_probe *probe)
{
    if (probe) {
        rt->probe_copy = *probe;
        rt->probe = &rt->probe_copy;
    } else
        rt->probe = NULL;
}

int rn_runtime_set_interventions(rn_runtime *rt, const rn_iv_set *set, rn_error *err)
{
    if (set && set->n && rt->gpu)
        return rn_seterr(err, RN_EINPUT, "--intervene: interventions run on the CPU only (--device cpu)");
    if (set && set->n && rn_state_tiered(rt->st))
        return rn_seterr(err, RN_EINPUT, "--intervene: interventions need the dense memory state (no --state-budget)");
    if (set && !set->prepared)
        return rn_seterr(err, RN_EINPUT, "interventions: the patch sources have not been run (rn_iv_prepare)");
    rt->iv = set && set->n ? set : NULL;
    return RN_OK;
}

void rn_runtime_set_stop_flag(rn_runtime *rt, volatile int *stop) { rt->stop = stop; }

int rn_runtime_set_hooks(rn_runtime *rt, const rn_hooks *h, rn_error *err)
{
    if (h && h->points && rt->gpu) return rn_seterr(err, RN_EINPUT, "hooks run on the CPU only (--device cpu)");
    if (h && h->points && !h->at) return rn_seterr(err, RN_EINPUT, "hooks: no function");
    if (h && h->points >> RN_HOOK_SLOT_STATE & 1) {
        if (rn_state_tiered(rt->st))
            return rn_seterr(err, RN_EINPUT, "the slot-state hook needs the dense memory state (no --state-budget)");
        int rows = h->slot_rows ? rt->chunk : 1;
        size_t n = (size_t)rows * rt->c.n_heads * rt->c.top_k * (rt->c.d_v + 1);
        if (rt->ss_rows < rows) {
            rn_real *ss = realloc(rt->ss, sizeof *ss * n);
            if (!ss) return rn_seterr(err, RN_ENOMEM, "out of memory allocating the slot-state hook's rows");
            rt->ss = ss, rt->ss_rows = rows;
        }
    }
    if (h) rt->hooks = *h;
    else memset(&rt->hooks, 0, sizeof rt->hooks);
    return RN_OK;
}

int rn_runtime_set_precision(rn_runtime *rt, rn_precision p, rn_error *err)
{
    if (p == rt->prec) return RN_OK;
    int rc = rn_device_check_infer_precision(rt->gpu ? RN_DEVICE_CUDA : RN_DEVICE_CPU, p, err);
    if (rc) return rc;
    if (rt->gpu) { /* the GPU runtime holds its own bf16 weights */
        rc = rn_cuda_rt_set_precision(rt->gpu, rt->m, p, err);
        /* a failed switch leaves no weights on the device: no precision
         * matches until a switch succeeds, so the next call retries */
        rt->prec = rc ? (rn_precision)-1 : p;
        return rc;
    }
    rn_wbf16_free(rt->wb);
    free(rt->widen);
    rt->wb = NULL, rt->widen = NULL, rt->prec = RN_PREC_FP32;
    if (p == RN_PREC_FP32) return RN_OK;
    if ((rc = rn_wbf16_create(rt->m, &rt->wb, err))) return rc;
    /* a prefill chunk of more than one row runs SGEMM over one matrix at a
     * time, widened back to the FP32 values of its bf16 weights */
    if (rt->chunk > 1) {
        rc = rn_memlimit_check("a widened weight matrix (--precision bf16)", 4.0 * rt->wb->max_matrix, err);
        if (!rc && !(rt->widen = malloc(sizeof(float) * (size_t)rt->wb->max_matrix)))
            rc = rn_seterr(err, RN_ENOMEM, "out of memory allocating a widened weight matrix");
        if (rc) {
            rn_wbf16_free(rt->wb);
            rt->wb = NULL;
            return rc;
        }
    }
    rt->prec = p;
    return RN_OK;
}

int64_t rn_runtime_pos(const rn_runtime *rt) { return rt->pos; }

int rn_runtime_head_state(const rn_runtime *rt, int layer, int head, const rn_real **S,
                          const rn_real **z, rn_error *err)
{
    if (rt->gpu) return rn_seterr(err, RN_EINPUT, "the memory state is read on the CPU runtime only");
    if (layer < 0 || layer >= rt->c.n_layers || head < 0 || head >= rt->c.n_heads)
        return rn_seterr(err, RN_EINPUT, "head %d.%d: the model has %d layers of %d heads", layer,
                         head, rt->c.n_layers, rt->c.n_heads);
    rn_real *s, *zz;
    int rc = rn_state_head(rt->st, layer, head, &s, &zz, err);
    if (rc) return rc;
    *S = s;
    *z = zz;
    return RN_OK;
}

/* Report one layer's accesses for n rows to the probe: head-major, and for
 * each position the K writes then the K reads. */
static void report(const rn_runtime *rt, int l, int n)
{
    const int H = rt->c.n_heads, K = rt->c.top_k;
    for (int h = 0; h < H; h++)
        for (int t = 0; t < n; t++) {
            size_t a = ((size_t)t * H + h) * K;
            rt->probe->access(rt->probe->user, l, h, (int)(rt->pos + t), RN_OP_WRITE, K,
                              rt->wslot + a, rt->waddr + a, rt->ww + a);
            rt->probe->access(rt->probe->user, l, h, (int)(rt->pos + t), RN_OP_READ, K,
                              rt->rslot + a, rt->raddr + a, rt->rw + a);
        }
}

/* out[n,n_out] (=|+=) in[n,n_in]·Wᵀ, with W's bf16 copy Wb in --precision bf16
 * (else NULL): one row (the generation step, bound by the bytes of W it
 * streams) by rn_gemv, more rows by SGEMM — over Wb widened to FP32 in
 * bf16, so both compute with the same weights. */
static void proj(rn_runtime *rt, float *out, const float *in, const float *W, const uint16_t *Wb, int n,
                 int n_in, int n_out, int accumulate)
{
    if (n == 1) {
        if (Wb) rn_gemv_bf16(out, Wb, in, n_out, n_in, accumulate);
        else rn_gemv_f32(out, W, in, n_out, n_in, accumulate);
        return;
    }
    if (Wb) {
        rn_bf16_widen(rt->widen, Wb, (size_t)n_out * n_in);
        W = rt->widen;
    }
    rn_matmul_forward(out, in, W, n, n_in, n_out, accumulate);
}

/* Call the hook at point p of layer l if it is wanted; RN_EINTR when it
 * asks to stop. */
static int hook_at(rn_runtime *rt, int p, int l, float *data, const uint32_t *slots, int n, int width,
                   int64_t pos0, rn_error *err)
{
    if (!(rt->hooks.points >> p & 1)) return RN_OK;
    if (rt->hooks.at(rt->hooks.user, p, l, data, slots, n, width, pos0))
        return rn_seterr(err, RN_EINTR, "stopped by a hook at layer %d, positions %lld..%lld", l, (long long)pos0,
                         (long long)pos0 + n - 1);
    return RN_OK;
}

/* Whether layer l calls the slot-state hook (rn_hooks.slot_layers). */
static int slot_hooked(const rn_runtime *rt, int l)
{
    if (!(rt->hooks.points >> RN_HOOK_SLOT_STATE & 1)) return 0;
    const uint64_t *m = rt->hooks.slot_layers;
    for (size_t i = 0; i < sizeof rt->hooks.slot_layers / sizeof *m; i++)
        if (m[i]) return m[l / 64] >> (l % 64) & 1;
    return 1; /* no mask: every layer */
}

/* The same for the chunk's rows (the first at rt->pos). */
static int hook(rn_runtime *rt, int p, int l, float *data, const uint32_t *slots, int n, int width, rn_error *err)
{
    return hook_at(rt, p, l, data, slots, n, width, rt->pos, err);
}

/* Row t of head (l, h)'s memory scan in halves, with the plain scan's
 * functions or, for a head with slot specs, the intervened ones — the
 * writes, then the read — so that a caller may look at the state between
 * them; S, z are the head's state (rn_state_head). */
static void head_write(rn_runtime *rt, int l, int h, int t, rn_real *S, rn_real *z)
{
    const rn_config *c = &rt->c;
    const int H = c->n_heads, K = c->top_k, dv = c->d_v;
    size_t a = ((size_t)t * H + h) * K, vv = (size_t)t * H * dv + (size_t)h * dv;
    if (rt->iv && rn_iv_has_slots(rt->iv, l, h))
        rn_iv_write(rt->iv, l, h, S, z, rt->v + vv, rt->wslot + a, rt->ww + a, K, dv, c->gamma, rt->pos + t);
    else
        rn_pdma_write(S, z, dv, rt->wslot + a, rt->ww + a, K, rt->v + vv, c->gamma);
}

static void head_read(rn_runtime *rt, int l, int h, int t, const rn_real *S, const rn_real *z)
{
    const rn_config *c = &rt->c;
    const int H = c->n_heads, K = c->top_k, dv = c->d_v;
    size_t a = ((size_t)t * H + h) * K, vv = (size_t)t * H * dv + (size_t)h * dv;
    if (rt->iv && rn_iv_has_slots(rt->iv, l, h))
        rn_iv_read(rt->iv, l, h, rt->o + vv, S, z, rt->rslot + a, rt->rw + a, K, dv, c->eps, rt->pos + t);
    else
        rn_pdma_read(rt->o + vv, S, z, dv, rt->rslot + a, rt->rw + a, K, c->eps);
}

/* Copy (to != 0: into rt->ss) or store back (to == 0) the state of the K
 * slots head h reads at row t, rt->ss's rows [.., H, K, d_v + 1] from
 * row0 (0, or t to keep every row). */
static void head_slots(rn_runtime *rt, int h, int t, int row0, rn_real *S, rn_real *z, int to)
{
    const int H = rt->c.n_heads, K = rt->c.top_k, dv = rt->c.d_v;
    const size_t rs = (size_t)dv + 1;
    for (int j = 0; j < K; j++) {
        uint32_t s = rt->rslot[((size_t)t * H + h) * K + j];
        rn_real *row = rt->ss + (((size_t)row0 * H + h) * K + j) * rs;
        if (to) {
            memcpy(row, S + (size_t)s * dv, sizeof *row * dv);
            row[dv] = z[s];
        } else {
            memcpy(S + (size_t)s * dv, row, sizeof *row * dv);
            z[s] = row[dv];
        }
    }
}

/* Layer l's memory scan over n rows when a slot-state hook may edit:
 * position by position, every head's writes, then the hook on the state of
 * the slots each head reads (rt->ss [H, K, d_v + 1], stored back into the
 * state after it), then every head's read.  Each head runs the same
 * functions in the same order as the plain scan (rn_pdma_scan_forward) or
 * the intervened one (rn_iv_scan), so an unedited state gives the same
 * bits. */
static int scan_slot_hooked(rn_runtime *rt, int l, int n, rn_error *err)
{
    const int H = rt->c.n_heads, K = rt->c.top_k, dv = rt->c.d_v;
    for (int t = 0; t < n; t++) {
        for (int h = 0; h < H; h++) {
            rn_real *S, *z;
            rn_state_head(rt->st, l, h, &S, &z, NULL); /* dense: cannot fail */
            head_write(rt, l, h, t, S, z);
            head_slots(rt, h, t, 0, S, z, 1);
        }
        const uint32_t *slots = rt->rslot + (size_t)t * H * K;
        int rc = hook_at(rt, RN_HOOK_SLOT_STATE, l, rt->ss, slots, 1, H * K * (dv + 1), rt->pos + t, err);
        if (rc) return rc;
        for (int h = 0; h < H; h++) {
            rn_real *S, *z;
            rn_state_head(rt->st, l, h, &S, &z, NULL);
            head_slots(rt, h, t, 0, S, z, 0); /* the hook's edits, into the state */
            head_read(rt, l, h, t, S, z);
        }
    }
    return RN_OK;
}

/* Head (l, h)'s memory scan over n rows (as scan_slot_hooked's, head by
 * head) recording, after each row's writes, the state of the slots it
 * reads into rt->ss [n, H, K, d_v + 1] (RN_HOOK_SLOT_STATE with
 * slot_rows).  Heads may run at once. */
static void scan_head_recorded(rn_runtime *rt, int l, int h, int n)
{
    rn_real *S, *z;
    rn_state_head(rt->st, l, h, &S, &z, NULL); /* dense: cannot fail */
    for (int t = 0; t < n; t++) {
        head_write(rt, l, h, t, S, z);
        head_slots(rt, h, t, t, S, z, 1);
        head_read(rt, l, h, t, S, z);
    }
}

/* Forward n <= chunk rows at positions pos..pos+n-1.  Shapes: x, hb [n,D];
 * q, k [n,H·dk]; v, o [n,H·dv]; g, u [n,F]; addresses [n,H,K]. */
static int forward_rows(rn_runtime *rt, const int *tokens, int n, float *logits, int all_rows,
                        rn_error *err)
{
    const rn_config *c = &rt->c;
    const rn_weights *w = &rt->m->w;
    const int D = c->d_model, H = c->n_heads, F = c->d_ff, K = c->top_k, dv = c->d_v;
    rn_threads_poll(); /* between chunks and tokens: follow the machine's load */
    const int hdk = H * rn_config_dk(c), hdv = H * dv;
    for (int t = 0; t < n; t++) {
        if (rt->wb) rn_bf16_widen(rt->x + (size_t)t * D, rt->wb->embed + (size_t)tokens[t] * D, D);
        else memcpy(rt->x + (size_t)t * D, w->embed + (size_t)tokens[t] * D, sizeof(rn_real) * D);
    }
    static const rn_layer_wbf16 fp32 = { 0 }; /* no bf16 copies: the FP32 matrices */
    for (int l = 0; l < c->n_layers; l++) {
        const rn_layer_weights *lw = &w->layer[l];
        const rn_layer_wbf16 *lb = rt->wb ? &rt->wb->layer[l] : &fp32;
        int rc = hook(rt, RN_HOOK_RESID_PRE, l, rt->x, NULL, n, D, err);
        if (rc) return rc;
        rn_rmsnorm_forward(rt->hb, NULL, rt->x, lw->attn_norm, n, D, c->norm_eps);
        proj(rt, rt->q, rt->hb, lw->wq, lb->wq, n, D, hdk, 0);
        proj(rt, rt->k, rt->hb, lw->wk, lb->wk, n, D, hdk, 0);
        if ((rc = hook(rt, RN_HOOK_Q, l, rt->q, NULL, n, hdk, err)) || (rc = hook(rt, RN_HOOK_K, l, rt->k, NULL, n, hdk, err)))
            return rc;
        rn_address_forward(rt->raddr, rt->rslot, rt->rw, rt->q, lw->q_alpha, c, c->cape_mask[l],
                           n, rt->pos, rt->ws, rt->n_ws);
        rn_address_forward(rt->waddr, rt->wslot, rt->ww, rt->k, lw->k_alpha, c, c->cape_mask[l],
                           n, rt->pos, rt->ws, rt->n_ws);
        if ((rc = hook(rt, RN_HOOK_ADDR_READ, l, rt->rw, rt->rslot, n, H * K, err)) ||
            (rc = hook(rt, RN_HOOK_ADDR_WRITE, l, rt->ww, rt->wslot, n, H * K, err)))
            return rc;
        const rn_iv_set *iv = rt->iv;
        const int tiered = rn_state_tiered(rt->st);
        /* A tiered layer's reads start as soon as its addresses are known:
         * the value projection is computed while they are under way. */
        if (tiered) rn_state_layer(rt->st, l, rt->wslot, rt->rslot, n);
        proj(rt, rt->v, rt->hb, lw->wv, lb->wv, n, D, hdv, 0);
        if ((rc = hook(rt, RN_HOOK_V, l, rt->v, NULL, n, hdv, err))) return rc;
        if (tiered) {
            /* one policy over all heads: serial, head by head (rn_state.h);
             * the rows it will miss were read ahead by rn_state_layer */
            for (int h = 0; h < H; h++)
                rn_state_scan(rt->st, l, h, rt->o, rt->v, rt->wslot, rt->ww, rt->rslot, rt->rw, n);
            if ((rc = rn_state_error(rt->st, err))) return rc;
        } else if (slot_hooked(rt, l) && !rt->hooks.slot_rows) {
            if ((rc = scan_slot_hooked(rt, l, n, err))) return rc;
        } else if (slot_hooked(rt, l)) {
            #pragma omp parallel for if (n > 1) schedule(dynamic, 1)
            for (int h = 0; h < H; h++) scan_head_recorded(rt, l, h, n);
            if ((rc = hook(rt, RN_HOOK_SLOT_STATE, l, rt->ss, rt->rslot, n, H * K * (dv + 1), err))) return rc;
        } else {
            #pragma omp parallel for if (n > 1) schedule(dynamic, 1)
            for (int h = 0; h < H; h++) {
                if (iv && rn_iv_has_slots(iv, l, h)) {
                    rn_real *Sh, *zh;
                    rn_state_head(rt->st, l, h, &Sh, &zh, NULL); /* dense: cannot fail */
                    rn_iv_scan(iv, l, h, rt->o, Sh, zh, rt->v, rt->wslot, rt->ww, rt->rslot, rt->rw, n,
                               H, K, dv, c->gamma, c->eps, rt->pos);
                } else
                    rn_state_scan(rt->st, l, h, rt->o, rt->v, rt->wslot, rt->ww, rt->rslot, rt->rw, n);
            }
        }
        if (iv) rn_iv_apply_o(iv, l, rt->o, n, rt->pos);
        if (rt->probe) report(rt, l, n);
        if ((rc = hook(rt, RN_HOOK_HEAD_OUT, l, rt->o, NULL, n, hdv, err))) return rc;
        proj(rt, rt->x, rt->o, lw->wo, lb->wo, n, hdv, D, 1);
        if ((rc = hook(rt, RN_HOOK_RESID_MID, l, rt->x, NULL, n, D, err))) return rc;
        rn_rmsnorm_forward(rt->hb, NULL, rt->x, lw->mlp_norm, n, D, c->norm_eps);
        proj(rt, rt->g, rt->hb, lw->w_gate, lb->w_gate, n, D, F, 0);
        proj(rt, rt->u, rt->hb, lw->w_up, lb->w_up, n, D, F, 0);
        rn_swiglu_forward(rt->g, rt->g, rt->u, (int64_t)n * F);
        if (rt->hooks.points >> RN_HOOK_MLP_OUT & 1) {
            /* the MLP's output on its own (hb is free again), then its add */
            proj(rt, rt->hb, rt->g, lw->w_down, lb->w_down, n, F, D, 0);
            if ((rc = hook(rt, RN_HOOK_MLP_OUT, l, rt->hb, NULL, n, D, err))) return rc;
            for (size_t i = 0; i < (size_t)n * D; i++) rt->x[i] += rt->hb[i];
        } else
            proj(rt, rt->x, rt->g, lw->w_down, lb->w_down, n, F, D, 1);
        if ((rc = hook(rt, RN_HOOK_RESID_POST, l, rt->x, NULL, n, D, err))) return rc;
    }
    if (logits) {
        int first = all_rows ? 0 : n - 1, rows = all_rows ? n : 1;
        rn_rmsnorm_forward(rt->hb, NULL, rt->x + (size_t)first * D, w->norm, rows, D, c->norm_eps);
        int rc = hook_at(rt, RN_HOOK_LN_FINAL, c->n_layers, rt->hb, NULL, rows, D, rt->pos + first, err);
        if (rc) return rc;
        proj(rt, logits, rt->hb, w->lm_head, rt->wb ? rt->wb->lm_head : NULL, rows, D, c->vocab_size, 0);
    }
    rt->pos += n;
    return RN_OK;
}

static int check_tokens(const rn_runtime *rt, const int *tokens, int T, rn_error *err)
{
    for (int t = 0; t < T; t++)
        if (tokens[t] < 0 || tokens[t] >= rt->c.vocab_size)
            return rn_seterr(err, RN_EINPUT, "token %d at position %d is outside the vocabulary [0, %d)",
                             tokens[t], t, rt->c.vocab_size);
    if (rt->pos + T > INT32_MAX)
        return rn_seterr(err, RN_EINPUT, "sequence longer than 2^31 tokens");
    return RN_OK;
}

/* One forward call of n <= chunk rows at the current position, on the
 * runtime's device: the span check of the interventions, then the probe is
 * told the rows computed together (rn_probe.h) before their accesses. */
static int forward(rn_runtime *rt, const int *tokens, int n, float *logits, int all_rows,
                   rn_error *err)
{
    int rc;
    if (rt->iv && (rc = rn_iv_check_span(rt->iv, rt->pos, n, err))) return rc;
    if (rt->probe && rt->probe->chunk) rt->probe->chunk(rt->probe->user, rt->pos, n);
    if (!rt->gpu) return forward_rows(rt, tokens, n, logits, all_rows, err);
    if ((rc = rn_cuda_forward(rt->gpu, tokens, n, rt->pos, logits, all_rows, rt->probe, err))) return rc;
    rt->pos += n;
    return RN_OK;
}

int rn_prefill(rn_runtime *rt, const int *tokens, int T, float *logits, int all_rows, rn_error *err)
{
    int rc = check_tokens(rt, tokens, T, err);
    if (rc) return rc;
    for (int t0 = 0; t0 < T; t0 += rt->chunk) {
        if (rt->stop && *rt->stop)
            return rn_seterr(err, RN_EINTR, "interrupted after %d of %d tokens", t0, T);
        int n = T - t0 < rt->chunk ? T - t0 : rt->chunk;
        float *lg = NULL;
        if (logits && all_rows) lg = logits + (size_t)t0 * rt->c.vocab_size;
        else if (logits && t0 + n == T) lg = logits;
        if ((rc = forward(rt, tokens + t0, n, lg, all_rows, err))) return rc;
    }
    return RN_OK;
}

int rn_step(rn_runtime *rt, int token, float *logits, rn_error *err)
{
    int rc = check_tokens(rt, &token, 1, err);
    return rc ? rc : forward(rt, &token, 1, logits, 0, err);
}

int rn_runtime_state_counters(const rn_runtime *rt, rn_state_counters *out)
{
    memset(out, 0, sizeof *out);
    if (!rt->st || !rn_state_tiered(rt->st)) return 0;
    rn_state_get_counters(rt->st, out);
    return 1;
}

int rn_runtime_flush_state(rn_runtime *rt, rn_error *err)
{
    if (!rt->st) return RN_OK;
    rn_state_set_position(rt->st, rt->pos);
    return rn_state_flush(rt->st, err);
}
