/* test_intervene_dense.c — each intervention kind against a naive dense
 * double-precision forward (full product-softmax address vectors sorted
 * for top-K, every head's state dense) that applies the intervention's
 * stated meaning by itself, with no code shared with core/infer/rn_intervene.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_patch_source.h"
#include "rn_intervene.h"
#include "rn_model.h"
#include "rn_params.h"
#include "rn_runtime.h"
#include "th.h"

enum { T = 23 };

/* One intervention as the reference applies it. */
typedef struct {
    int kind;            /* RN_IV_* */
    int l, h;            /* h -1: the whole layer */
    int t0, t1;
    int s0, s1;          /* slots s0..s1 (slot kinds) */
    double F;
    const double *src;   /* patch: the source run's o, [L][H][T][dv] */
} ref_iv;

typedef struct { double w; int64_t a; } wa;
static int cmp_wa(const void *x, const void *y)
{
    const wa *p = x, *q = y;
    if (p->w > q->w) return -1;
    if (p->w < q->w) return 1;
    return p->a < q->a ? -1 : 1;
}

static void ref_rmsnorm(double *o, const double *x, const float *g, int D, double eps)
{
    double ss = 0;
    for (int i = 0; i < D; i++) ss += x[i] * x[i];
    double s = 1.0 / sqrt(ss / D + eps);
    for (int i = 0; i < D; i++) o[i] = x[i] * s * g[i];
}

static void ref_mat(double *o, const double *x, const float *W, int in, int out)
{
    for (int r = 0; r < out; r++) {
        double s = 0;
        for (int i = 0; i < in; i++) s += (double)W[(int64_t)r * in + i] * x[i];
        o[r] = s;
    }
}

static void ref_address(const double *a, int U, int dp, int K, double scale, int64_t M, int64_t *addr,
                        double *w, wa *buf)
{
    double p[64];
    for (int u = 0; u < U; u++) {
        double mx = -1e300, s = 0;
        for (int i = 0; i < dp; i++) mx = fmax(mx, scale * a[u * dp + i]);
        for (int i = 0; i < dp; i++) { p[u * dp + i] = exp(scale * a[u * dp + i] - mx); s += p[u * dp + i]; }
        for (int i = 0; i < dp; i++) p[u * dp + i] /= s;
    }
    for (int64_t m = 0; m < M; m++) {
        double prod = 1;
        int64_t rest = m;
        for (int u = U - 1; u >= 0; u--) { prod *= p[u * dp + rest % dp]; rest /= dp; }
        buf[m].w = prod;
        buf[m].a = m;
    }
    qsort(buf, M, sizeof *buf, cmp_wa);
    for (int j = 0; j < K; j++) { addr[j] = buf[j].a; w[j] = buf[j].w; }
}

static int hits(const ref_iv *iv, int kind, int l, int h, int t)
{
    return iv && iv->kind == kind && iv->l == l && (iv->h < 0 || iv->h == h) && t >= iv->t0 && t <= iv->t1;
}

/* logits[T,V]; o_out (optional) gets every head's read output [L][H][T][dv]. */
static void ref_forward(const rn_model *m, const int *tok, const ref_iv *iv, double *logits, double *o_out)
{
    const rn_config *c = &m->cfg;
    const int D = c->d_model, H = c->n_heads, dk = rn_config_dk(c), dv = c->d_v, F = c->d_ff,
              K = c->top_k, V = c->vocab_size, L = c->n_layers;
    const int64_t M = rn_config_slots(c);
    double *x = malloc(sizeof(double) * T * D), *h = malloc(sizeof(double) * D);
    double *q = malloc(sizeof(double) * H * dk), *k = malloc(sizeof(double) * H * dk);
    double *v = malloc(sizeof(double) * T * H * dv), *o = malloc(sizeof(double) * T * H * dv);
    double *ox = malloc(sizeof(double) * D), *g = malloc(sizeof(double) * F), *u = malloc(sizeof(double) * F);
    double *S = malloc(sizeof(double) * M * dv), *z = malloc(sizeof(double) * M);
    int64_t *waddr = malloc(sizeof(int64_t) * T * H * K), *raddr = malloc(sizeof(int64_t) * T * H * K);
    double *ww = malloc(sizeof(double) * T * H * K), *rw = malloc(sizeof(double) * T * H * K);
    wa *buf = malloc(sizeof(wa) * M);
    for (int t = 0; t < T; t++)
        for (int i = 0; i < D; i++) x[t * D + i] = m->w.embed[(int64_t)tok[t] * D + i];
    for (int l = 0; l < L; l++) {
        const rn_layer_weights *lw = &m->w.layer[l];
        for (int t = 0; t < T; t++) {
            ref_rmsnorm(h, x + t * D, lw->attn_norm, D, c->norm_eps);
            ref_mat(q, h, lw->wq, D, H * dk);
            ref_mat(k, h, lw->wk, D, H * dk);
            ref_mat(v + (int64_t)t * H * dv, h, lw->wv, D, H * dv);
            for (int n = 0; n < H; n++) {
                int64_t *ra = raddr + ((int64_t)t * H + n) * K, *wa_ = waddr + ((int64_t)t * H + n) * K;
                ref_address(q + n * dk, c->order, c->d_p, K, exp(lw->q_alpha[n]) / c->tau, M, ra,
                            rw + ((int64_t)t * H + n) * K, buf);
                ref_address(k + n * dk, c->order, c->d_p, K, exp(lw->k_alpha[n]) / c->tau, M, wa_,
                            ww + ((int64_t)t * H + n) * K, buf);
                if (rn_config_cape(c, l, n))
                    for (int j = 0; j < K; j++) {
                        ra[j] = ((ra[j] - t) % M + M) % M;
                        wa_[j] = ((wa_[j] - t) % M + M) % M;
                    }
            }
        }
        for (int n = 0; n < H; n++) {
            for (int64_t i = 0; i < M * dv; i++) S[i] = 0;
            for (int64_t i = 0; i < M; i++) z[i] = 1.0 / M;
            for (int t = 0; t < T; t++) {
                int abl = hits(iv, RN_IV_ABLATE_SLOTS, l, n, t), scl = hits(iv, RN_IV_SCALE_SLOTS, l, n, t);
                /* ablated slots: the initial state throughout the range */
                if (abl && t == iv->t0)
                    for (int s = iv->s0; s <= iv->s1; s++) {
                        for (int i = 0; i < dv; i++) S[s * dv + i] = 0;
                        z[s] = 1.0 / M;
                    }
                for (int j = 0; j < K; j++) {
                    int64_t s = waddr[((int64_t)t * H + n) * K + j];
                    if (abl && s >= iv->s0 && s <= iv->s1) continue;
                    double w = ww[((int64_t)t * H + n) * K + j], d = pow(1 - w, c->gamma);
                    for (int i = 0; i < dv; i++) S[s * dv + i] = d * S[s * dv + i] + w * v[(int64_t)t * H * dv + n * dv + i];
                    z[s] = d * z[s] + w;
                }
                double *ot = o + (int64_t)t * H * dv + n * dv;
                for (int i = 0; i < dv; i++) ot[i] = 0;
                for (int j = 0; j < K; j++) {
                    int64_t s = raddr[((int64_t)t * H + n) * K + j];
                    double r = rw[((int64_t)t * H + n) * K + j];
                    if (scl && s >= iv->s0 && s <= iv->s1) r *= iv->F;
                    for (int i = 0; i < dv; i++) ot[i] += r * S[s * dv + i] / (z[s] + c->eps);
                }
                if (hits(iv, RN_IV_ABLATE_HEAD, l, n, t) || hits(iv, RN_IV_ABLATE_LAYER, l, n, t))
                    for (int i = 0; i < dv; i++) ot[i] = 0;
                if (hits(iv, RN_IV_PATCH_HEAD, l, n, t))
                    memcpy(ot, iv->src + (((int64_t)l * H + n) * T + t) * dv, sizeof(double) * dv);
                if (o_out) memcpy(o_out + (((int64_t)l * H + n) * T + t) * dv, ot, sizeof(double) * dv);
            }
        }
        for (int t = 0; t < T; t++) {
            ref_mat(ox, o + (int64_t)t * H * dv, lw->wo, H * dv, D);
            for (int i = 0; i < D; i++) x[t * D + i] += ox[i];
            ref_rmsnorm(h, x + t * D, lw->mlp_norm, D, c->norm_eps);
            ref_mat(g, h, lw->w_gate, D, F);
            ref_mat(u, h, lw->w_up, D, F);
            for (int i = 0; i < F; i++) g[i] = g[i] / (1 + exp(-g[i])) * u[i];
            ref_mat(ox, g, lw->w_down, F, D);
            for (int i = 0; i < D; i++) x[t * D + i] += ox[i];
        }
    }
    for (int t = 0; t < T; t++) {
        ref_rmsnorm(h, x + t * D, m->w.norm, D, c->norm_eps);
        ref_mat(logits + (int64_t)t * V, h, m->w.lm_head, D, V);
    }
    free(x); free(h); free(q); free(k); free(v); free(o); free(ox); free(g); free(u);
    free(S); free(z); free(waddr); free(raddr); free(ww); free(rw); free(buf);
}

static double rel_err(const float *a, const double *b, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) { num += (a[i] - b[i]) * (a[i] - b[i]); den += b[i] * b[i]; }
    return sqrt(num / (den + 1e-30));
}

static double rel_diff(const double *a, const double *b, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) { num += (a[i] - b[i]) * (a[i] - b[i]); den += b[i] * b[i]; }
    return sqrt(num / (den + 1e-30));
}

/* The model of test_runtime.c's reference test: larger-than-init q, k and
 * embedding weights so that addresses differ, varied alphas. */
static void make_model(rn_model *m)
{
    rn_config c;
    rn_config_default(&c);
    c.vocab_size = 300, c.d_model = 32, c.n_layers = 2, c.n_heads = 3, c.d_p = 4, c.order = 3;
    c.d_v = 8, c.top_k = 5, c.d_ff = 48, c.gamma = 0.5f, c.eps = 1e-4f, c.tie_embeddings = 0;
    c.tokenizer = RN_TOK_IDS;
    memset(c.cape_mask, 0, sizeof c.cape_mask);
    c.cape_mask[0] = 5;
    rn_error err;
    CU_ASSERT_EQUAL_FATAL(rn_model_create_random(m, &c, 77, &err), RN_OK);
    rn_tensor_desc d[64];
    int n = rn_params_count_tensors(&c);
    rn_params_layout(&c, d);
    for (int i = 0; i < n; i++)
        if (strstr(d[i].name, "q_proj") || strstr(d[i].name, "k_proj") || strstr(d[i].name, "embed"))
            for (int64_t j = 0; j < d[i].numel; j++) m->params[d[i].offset + j] *= 40.0f;
        else if (strstr(d[i].name, "alpha"))
            for (int64_t j = 0; j < d[i].numel; j++) m->params[d[i].offset + j] = 0.3f * (float)(j % 3) - 0.2f;
}

TH_TEST(test_iv_dense_each_kind, "each intervention kind equals a dense double forward applying its meaning")
{
    rn_model m;
    make_model(&m);
    const int V = m.cfg.vocab_size, L = m.cfg.n_layers, H = m.cfg.n_heads, dv = m.cfg.d_v;
    int tok[T], src[T];
    char text[T * 5], path[512];
    size_t len = 0;
    for (int t = 0; t < T; t++) {
        tok[t] = (t * 37 + 11) % V;
        src[t] = (t * 53 + 2) % V;
        len += (size_t)snprintf(text + len, sizeof text - len, "%d ", src[t]);
    }
    snprintf(path, sizeof path, "%s", th_path("dense-src.txt"));
    CU_ASSERT_EQUAL_FATAL(th_write_file(path, text, len), 0);
    double *plain = malloc(sizeof(double) * T * V), *ref = malloc(sizeof(double) * T * V);
    double *src_o = malloc(sizeof(double) * L * H * T * dv), *src_lg = malloc(sizeof(double) * T * V);
    ref_forward(&m, tok, NULL, plain, NULL);
    ref_forward(&m, src, NULL, src_lg, src_o);
    char patch_spec[600];
    snprintf(patch_spec, sizeof patch_spec, "patch-head 1.1 from %s@6-18", path);
    const struct { const char *spec; ref_iv iv; } cases[] = {
        { "ablate-slots 0.1:0-40@4-15", { RN_IV_ABLATE_SLOTS, 0, 1, 4, 15, 0, 40, 1, NULL } },
        { "ablate-slots 1.2:10-63", { RN_IV_ABLATE_SLOTS, 1, 2, 0, T, 10, 63, 1, NULL } },
        { "ablate-head 0.2@3-", { RN_IV_ABLATE_HEAD, 0, 2, 3, T, 0, 0, 1, NULL } },
        { "ablate-layer 1@10-12", { RN_IV_ABLATE_LAYER, 1, -1, 10, 12, 0, 0, 1, NULL } },
        { "scale-slots 0.0:0-31=-1.5@5-", { RN_IV_SCALE_SLOTS, 0, 0, 5, T, 0, 31, -1.5, NULL } },
        { "scale-slots 1.1:20-60=3", { RN_IV_SCALE_SLOTS, 1, 1, 0, T, 20, 60, 3, NULL } },
        { patch_spec, { RN_IV_PATCH_HEAD, 1, 1, 6, 18, 0, 0, 1, src_o } },
    };
    float *lg = malloc(sizeof(float) * T * V);
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        ref_forward(&m, tok, &cases[ci].iv, ref, NULL);
        rn_iv_set iv;
        rn_error err;
        rn_iv_init(&iv, &m.cfg);
        CU_ASSERT_EQUAL_FATAL(rn_iv_add(&iv, cases[ci].spec, &err), RN_OK);
        CU_ASSERT_EQUAL_FATAL(rn_iv_prepare(&iv, &m, &err), RN_OK);
        rn_runtime *rt;
        CU_ASSERT_EQUAL_FATAL(rn_runtime_create(&m, 8, &rt, &err), RN_OK); /* 3 chunks */
        CU_ASSERT_EQUAL_FATAL(rn_runtime_set_interventions(rt, &iv, &err), RN_OK);
        CU_ASSERT_EQUAL_FATAL(rn_prefill(rt, tok, T, lg, 1, &err), RN_OK);
        double e = rel_err(lg, ref, (int64_t)T * V), moved = rel_diff(ref, plain, (int64_t)T * V);
        CU_ASSERT(e < 1e-5);
        CU_ASSERT(moved > 1e-3); /* the intervention changes the output */
        if (e >= 1e-5 || moved <= 1e-3)
            fprintf(stderr, "\n'%s': rel err %g vs the dense reference, moved %g\n", cases[ci].spec, e, moved);
        rn_runtime_free(rt);
        rn_iv_free(&iv);
    }
    free(lg); free(plain); free(ref); free(src_o); free(src_lg);
    rn_model_free(&m);
}
