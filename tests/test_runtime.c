/* test_runtime.c — the inference paths against independent references:
 * sparse PDMA vs a dense M×d_v state with M-vectors of weights; the whole
 * prefill vs a naive double-precision forward that builds the full product
 * softmax vector and sorts it; prefill vs step-by-step logits; the probe's
 * events; tokenizers and sampler. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rn_layers.h"
#include "rn_model.h"
#include "rn_patch_source.h"
#include "rn_precision.h"
#include "rn_rng.h"
#include "rn_runtime.h"
#include "rn_sampler.h"
#include "rn_tokenizer.h"
#include "th.h"

/* ---- PDMA: sparse vs dense ---- */

TH_TEST(test_pdma_dense, "sparse PDMA equals dense M x d_v reference")
{
    const int M = 32, dv = 5, K = 4, T = 60;
    const float gammas[] = { 0.0f, 0.5f, 1.0f, 2.0f };
    rn_rng rng;
    rn_rng_seed(&rng, 5);
    for (size_t g = 0; g < 4; g++) {
        float gamma = gammas[g], eps = 1e-3f;
        float *S = malloc(sizeof(float) * M * dv), *z = malloc(sizeof(float) * M);
        double *DS = calloc(M * dv, sizeof(double)), *Dz = malloc(sizeof(double) * M);
        rn_pdma_reset(S, z, M, dv);
        for (int i = 0; i < M; i++) Dz[i] = 1.0 / M;
        double maxerr = 0;
        for (int t = 0; t < T; t++) {
            uint32_t ws[4], rs[4];
            float ww[4], rw[4], v[5], o[5];
            /* K distinct slots; include weight 1 and 0 now and then */
            for (int j = 0; j < K; j++) {
                int dup;
                do {
                    ws[j] = (uint32_t)rn_rng_below(&rng, 8); /* few slots: reuse */
                    dup = 0;
                    for (int i = 0; i < j; i++) dup |= ws[i] == ws[j];
                } while (dup);
                do {
                    rs[j] = (uint32_t)rn_rng_below(&rng, 10);
                    dup = 0;
                    for (int i = 0; i < j; i++) dup |= rs[i] == rs[j];
                } while (dup);
                ww[j] = (t % 17 == 3 && j == 0) ? 1.0f : (float)rn_rng_uniform(&rng) * 0.5f;
                rw[j] = (float)rn_rng_uniform(&rng);
            }
            for (int i = 0; i < dv; i++) v[i] = (float)rn_rng_normal(&rng);
            rn_pdma_write(S, z, dv, ws, ww, K, v, gamma);
            rn_pdma_read(o, S, z, dv, rs, rw, K, eps);
            /* dense: w as an M-vector, every slot updated */
            double wv[32] = { 0 }, rv[32] = { 0 };
            for (int j = 0; j < K; j++) { wv[ws[j]] = ww[j]; rv[rs[j]] = rw[j]; }
            for (int s = 0; s < M; s++) {
                double d = pow(1.0 - wv[s], gamma); /* pow(0,0) = 1 */
                for (int i = 0; i < dv; i++) DS[s * dv + i] = d * DS[s * dv + i] + wv[s] * v[i];
                Dz[s] = d * Dz[s] + wv[s];
            }
            for (int i = 0; i < dv; i++) {
                double ref = 0;
                for (int s = 0; s < M; s++) ref += rv[s] * DS[s * dv + i] / (Dz[s] + eps);
                double e = fabs(ref - o[i]) / (1e-3 + fabs(ref));
                if (e > maxerr) maxerr = e;
            }
        }
        CU_ASSERT(maxerr < 1e-4);
        if (maxerr >= 1e-4) fprintf(stderr, "\ngamma %g: max rel err %g\n", gamma, maxerr);
        free(S); free(z); free(DS); free(Dz);
    }
}

/* ---- naive reference forward (double, dense addressing) ---- */

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

/* Dense address vector of length M: full product softmax, then top-K by
 * sorting all M entries (ties to the smaller address). */
static void ref_address(const double *a, int U, int dp, int K, double scale, int64_t M,
                        int64_t *addr, double *w, wa *buf)
{
    double p[64];
    for (int u = 0; u < U; u++) {
        double mx = -1e300, s = 0;
        for (int i = 0; i < dp; i++) if (scale * a[u * dp + i] > mx) mx = scale * a[u * dp + i];
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

/* logits[T,V] of the model on tokens, computed naively. */
static void ref_forward(const rn_model *m, const int *tok, int T, double *logits)
{
    const rn_config *c = &m->cfg;
    const int D = c->d_model, H = c->n_heads, dk = rn_config_dk(c), dv = c->d_v, F = c->d_ff,
              K = c->top_k, V = c->vocab_size;
    const int64_t M = rn_config_slots(c);
    double *x = malloc(sizeof(double) * T * D), *h = malloc(sizeof(double) * D);
    double *q = malloc(sizeof(double) * H * dk), *k = malloc(sizeof(double) * H * dk);
    double *v = malloc(sizeof(double) * T * H * dv), *o = malloc(sizeof(double) * H * dv);
    double *ox = malloc(sizeof(double) * D), *g = malloc(sizeof(double) * F), *u = malloc(sizeof(double) * F);
    double *S = malloc(sizeof(double) * M * dv), *z = malloc(sizeof(double) * M);
    int64_t *waddr = malloc(sizeof(int64_t) * T * H * K), *raddr = malloc(sizeof(int64_t) * T * H * K);
    double *ww = malloc(sizeof(double) * T * H * K), *rw = malloc(sizeof(double) * T * H * K);
    wa *buf = malloc(sizeof(wa) * M);
    for (int t = 0; t < T; t++)
        for (int i = 0; i < D; i++) x[t * D + i] = m->w.embed[(int64_t)tok[t] * D + i];
    for (int l = 0; l < c->n_layers; l++) {
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
                /* dense write: every slot, weight 0 where not addressed */
                for (int j = 0; j < K; j++) {
                    int64_t s = waddr[((int64_t)t * H + n) * K + j];
                    double w = ww[((int64_t)t * H + n) * K + j], d = pow(1 - w, c->gamma);
                    for (int i = 0; i < dv; i++) S[s * dv + i] = d * S[s * dv + i] + w * v[(int64_t)t * H * dv + n * dv + i];
                    z[s] = d * z[s] + w;
                }
                double *ot = o + n * dv;
                for (int i = 0; i < dv; i++) ot[i] = 0;
                for (int j = 0; j < K; j++) {
                    int64_t s = raddr[((int64_t)t * H + n) * K + j];
                    double r = rw[((int64_t)t * H + n) * K + j];
                    for (int i = 0; i < dv; i++) ot[i] += r * S[s * dv + i] / (z[s] + c->eps);
                }
                /* stash o_t in v's place after use? keep separate: store into x later */
                memcpy(v + (int64_t)t * H * dv + n * dv, ot, sizeof(double) * dv); /* v_t no longer needed for head n */
            }
        }
        for (int t = 0; t < T; t++) {
            ref_mat(ox, v + (int64_t)t * H * dv, lw->wo, H * dv, D);
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

static void small_config(rn_config *c, int tie, uint64_t cape0, uint64_t cape1, float gamma)
{
    rn_config_default(c);
    c->vocab_size = 300;
    c->d_model = 32;
    c->n_layers = 2;
    c->n_heads = 3;
    c->d_p = 4;
    c->order = 3;
    c->d_v = 8;
    c->top_k = 5;
    c->d_ff = 48;
    c->gamma = gamma;
    c->eps = 1e-4f;
    c->tie_embeddings = tie;
    memset(c->cape_mask, 0, sizeof c->cape_mask);
    c->cape_mask[0] = cape0;
    c->cape_mask[1] = cape1;
}

/* Larger-than-init weights so that addresses differ across tokens. */
static void make_model(rn_model *m, const rn_config *c, uint64_t seed)
{
    rn_error err;
    CU_ASSERT_EQUAL_FATAL(rn_model_create_random(m, c, seed, &err), RN_OK);
    rn_tensor_desc d[64];
    int n = rn_params_count_tensors(c);
    rn_params_layout(c, d);
    for (int i = 0; i < n; i++)
        if (strstr(d[i].name, "q_proj") || strstr(d[i].name, "k_proj") || strstr(d[i].name, "embed"))
            for (int64_t j = 0; j < d[i].numel; j++) m->params[d[i].offset + j] *= 40.0f;
        else if (strstr(d[i].name, "alpha"))
            for (int64_t j = 0; j < d[i].numel; j++) m->params[d[i].offset + j] = 0.3f * (float)(j % 3) - 0.2f;
}

static double rel_err(const float *a, const double *b, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) { num += (a[i] - b[i]) * (a[i] - b[i]); den += b[i] * b[i]; }
    return sqrt(num / (den + 1e-30));
}

/* Prefill of every row, then step by step from a reset state, against
 * ref[T, V]: relative error < 1e-5 both ways (what names the case). */
static void check_vs_ref(rn_runtime *rt, const int *tok, int T, const double *ref, int V, const char *what)
{
    rn_error err;
    float *lg = malloc(sizeof(float) * T * V), *st = malloc(sizeof(float) * V);
    rn_runtime_reset(rt);
    CU_ASSERT_EQUAL(rn_prefill(rt, tok, T, lg, 1, &err), RN_OK);
    double e = rel_err(lg, ref, (int64_t)T * V);
    CU_ASSERT(e < 1e-5);
    if (e >= 1e-5) fprintf(stderr, "\n%s: prefill vs reference rel err %g\n", what, e);
    rn_runtime_reset(rt);
    double worst = 0;
    for (int t = 0; t < T; t++) {
        CU_ASSERT_EQUAL(rn_step(rt, tok[t], st, &err), RN_OK);
        double ee = rel_err(st, ref + (int64_t)t * V, V);
        if (ee > worst) worst = ee;
    }
    CU_ASSERT(worst < 1e-5);
    if (worst >= 1e-5) fprintf(stderr, "\n%s: step vs reference rel err %g\n", what, worst);
    CU_ASSERT_EQUAL(rn_runtime_pos(rt), T);
    free(st); free(lg);
}

static double rel_err_d(const double *a, const double *b, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) { num += (a[i] - b[i]) * (a[i] - b[i]); den += b[i] * b[i]; }
    return sqrt(num / (den + 1e-30));
}

TH_TEST(test_prefill_matches_reference, "prefill and step equal a naive dense forward")
{
    const struct { int tie; uint64_t c0, c1; float gamma; } cases[] = {
        { 1, 7, 0, 1.0f }, { 0, 0, 5, 0.5f }, { 1, 2, 3, 2.0f }, { 0, 0, 0, 0.0f },
    };
    int T = 23;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        rn_config c;
        small_config(&c, cases[ci].tie, cases[ci].c0, cases[ci].c1, cases[ci].gamma);
        rn_model m;
        make_model(&m, &c, 100 + ci);
        int tok[23];
        rn_rng rng;
        rn_rng_seed(&rng, ci);
        for (int t = 0; t < T; t++) tok[t] = (int)rn_rng_below(&rng, c.vocab_size);
        double *ref = malloc(sizeof(double) * T * c.vocab_size);
        ref_forward(&m, tok, T, ref);
        rn_runtime *rt;
        rn_error err;
        CU_ASSERT_EQUAL_FATAL(rn_runtime_create(&m, 8, &rt, &err), RN_OK); /* 3 chunks */
        char what[32];
        snprintf(what, sizeof what, "case %zu", ci);
        check_vs_ref(rt, tok, T, ref, c.vocab_size, what);
        free(ref);
        rn_runtime_free(rt);
        rn_model_free(&m);
    }
}

/* --precision bf16: the runtime's bf16 matrices (prefill: SGEMM over the
 * widened matrix; step: the bf16 GEMV) against the naive double forward
 * over the model whose matrices were rounded to bf16 (rn_model_copy_bf16):
 * the same weights by two independent routes.  And the rounding is real:
 * the bf16 logits differ from the fp32 model's. */
TH_TEST(test_bf16_weights, "bf16 weights: prefill and step equal a naive forward over the rounded weights")
{
    rn_config c;
    small_config(&c, 0, 5, 2, 1.0f);
    rn_model m, mb;
    make_model(&m, &c, 77);
    rn_error err;
    CU_ASSERT_EQUAL_FATAL(rn_model_copy_bf16(&mb, &m, &err), RN_OK);
    enum { T = 21 };
    int tok[T];
    for (int t = 0; t < T; t++) tok[t] = (t * 13 + 5) % c.vocab_size;
    double *ref = malloc(sizeof(double) * T * c.vocab_size), *ref32 = malloc(sizeof(double) * T * c.vocab_size);
    ref_forward(&mb, tok, T, ref);
    ref_forward(&m, tok, T, ref32);
    CU_ASSERT(rel_err_d(ref, ref32, (int64_t)T * c.vocab_size) > 1e-4); /* bf16 changed the function */
    rn_runtime *rt;
    CU_ASSERT_EQUAL_FATAL(rn_runtime_create(&m, 8, &rt, &err), RN_OK);
    CU_ASSERT_EQUAL(rn_runtime_set_precision(rt, RN_PREC_TF32, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "--precision tf32"));
    CU_ASSERT_EQUAL_FATAL(rn_runtime_set_precision(rt, RN_PREC_BF16, &err), RN_OK);
    check_vs_ref(rt, tok, T, ref, c.vocab_size, "bf16");
    /* back to fp32: the plain model again */
    CU_ASSERT_EQUAL(rn_runtime_set_precision(rt, RN_PREC_FP32, &err), RN_OK);
    check_vs_ref(rt, tok, T, ref32, c.vocab_size, "fp32 again");
    free(ref); free(ref32);
    rn_runtime_free(rt);
    rn_model_free(&mb);
    rn_model_free(&m);
}

/* Prefill of a prefix, then steps, equals prefill of everything; last-row
 * logits equal the all-rows output. */
TH_TEST(test_prefill_then_step, "prefill then step equals one prefill")
{
    rn_config c;
    small_config(&c, 1, 7, 2, 1.0f);
    rn_model m;
    make_model(&m, &c, 9);
    int T = 40, tok[40];
    for (int t = 0; t < T; t++) tok[t] = (t * 37 + 11) % c.vocab_size;
    rn_runtime *a, *b;
    rn_error err;
    CU_ASSERT_EQUAL_FATAL(rn_runtime_create(&m, 64, &a, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(rn_runtime_create(&m, 5, &b, &err), RN_OK);
    float *all = malloc(sizeof(float) * T * c.vocab_size), *one = malloc(sizeof(float) * c.vocab_size);
    CU_ASSERT_EQUAL(rn_prefill(a, tok, T, all, 1, &err), RN_OK);
    CU_ASSERT_EQUAL(rn_prefill(b, tok, 17, one, 0, &err), RN_OK);
    double ref[1024];
    for (int i = 0; i < c.vocab_size; i++) ref[i] = all[16 * c.vocab_size + i];
    CU_ASSERT(rel_err(one, ref, c.vocab_size) < 1e-5);
    for (int t = 17; t < T; t++) CU_ASSERT_EQUAL(rn_step(b, tok[t], one, &err), RN_OK);
    for (int i = 0; i < c.vocab_size; i++) ref[i] = all[(T - 1) * c.vocab_size + i];
    CU_ASSERT(rel_err(one, ref, c.vocab_size) < 1e-5);
    /* out-of-vocabulary token is rejected, state untouched */
    int bad = c.vocab_size;
    CU_ASSERT_EQUAL(rn_step(b, bad, one, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "vocabulary"));
    CU_ASSERT_EQUAL(rn_runtime_pos(b), T);
    free(all); free(one);
    rn_runtime_free(a);
    rn_runtime_free(b);
    rn_model_free(&m);
}

/* ---- probe ---- */

typedef struct {
    int calls, bad_order;
    int last_pos[4][8][2];
    uint32_t slots[2][3][40][2][5];
    float w[2][3][40][2][5];
    int k;
} rec;

static void rec_access(void *user, int layer, int head, int pos, int op, int k,
                       const uint32_t *slot, const uint32_t *addr, const float *weight)
{
    rec *r = user;
    r->calls++;
    r->k = k;
    if (pos < r->last_pos[layer][head][op]) r->bad_order++;
    r->last_pos[layer][head][op] = pos;
    for (int j = 0; j < k; j++) {
        r->slots[layer][head][pos][op][j] = slot[j];
        r->w[layer][head][pos][op][j] = weight[j];
        if (j && weight[j] > weight[j - 1]) r->bad_order++;
        (void)addr;
    }
}

TH_TEST(test_probe_events, "probe sees every access, same in both paths")
{
    rn_config c;
    small_config(&c, 1, 7, 0, 1.0f);
    rn_model m;
    make_model(&m, &c, 21);
    int T = 30, tok[30];
    for (int t = 0; t < T; t++) tok[t] = (t * 13 + 5) % c.vocab_size;
    rec *r1 = calloc(1, sizeof *r1), *r2 = calloc(1, sizeof *r2);
    rn_probe p1 = { .user = r1, .access = rec_access }, p2 = { .user = r2, .access = rec_access };
    rn_runtime *rt;
    rn_error err;
    CU_ASSERT_EQUAL_FATAL(rn_runtime_create(&m, 7, &rt, &err), RN_OK);
    rn_runtime_set_probe(rt, &p1);
    CU_ASSERT_EQUAL(rn_prefill(rt, tok, T, NULL, 0, &err), RN_OK);
    rn_runtime_reset(rt);
    rn_runtime_set_probe(rt, &p2);
    for (int t = 0; t < T; t++) rn_step(rt, tok[t], NULL, &err);
    CU_ASSERT_EQUAL(r1->calls, 2 * 3 * T * 2);
    CU_ASSERT_EQUAL(r2->calls, 2 * 3 * T * 2);
    CU_ASSERT_EQUAL(r1->k, 5);
    CU_ASSERT_EQUAL(r1->bad_order, 0);
    CU_ASSERT_EQUAL(r2->bad_order, 0);
    CU_ASSERT_EQUAL(memcmp(r1->slots, r2->slots, sizeof r1->slots), 0);
    double maxd = 0;
    for (size_t i = 0; i < sizeof r1->w / sizeof(float); i++) {
        double d = fabs(((float *)r1->w)[i] - ((float *)r2->w)[i]);
        if (d > maxd) maxd = d;
    }
    CU_ASSERT(maxd < 1e-5);
    /* CAPE heads (layer 0) differ from non-CAPE (layer 1) in slot = addr − pos */
    int moved = 0;
    for (int t = 1; t < T; t++) moved += r1->slots[0][0][t][0][0] != r1->slots[0][0][0][0][0];
    CU_ASSERT(moved > 0);
    /* detached probe: no more calls */
    rn_runtime_set_probe(rt, NULL);
    int before = r2->calls;
    rn_step(rt, tok[0], NULL, &err);
    CU_ASSERT_EQUAL(r2->calls, before);
    free(r1); free(r2);
    rn_runtime_free(rt);
    rn_model_free(&m);
}

/* ---- tokenizers and sampler ---- */

TH_TEST(test_tokenizers, "tokenizers")
{
    rn_config c;
    rn_config_default(&c);
    int *ids, n;
    rn_error err;
    CU_ASSERT_EQUAL(rn_tokenize(&c, "hi\n", 3, "p", &ids, &n, &err), RN_OK);
    CU_ASSERT_EQUAL(n, 4);
    CU_ASSERT_EQUAL(ids[0], RN_BOS);
    CU_ASSERT_EQUAL(ids[1], 'h');
    CU_ASSERT_EQUAL(ids[3], '\n');
    free(ids);
    CU_ASSERT_EQUAL(rn_tokenize(&c, "", 0, "p.txt", &ids, &n, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "empty"));
    c.tokenizer = RN_TOK_IDS;
    c.vocab_size = 100;
    const char *good = " 1 2\n99\t0 \n";
    CU_ASSERT_EQUAL(rn_tokenize(&c, good, strlen(good), "p", &ids, &n, &err), RN_OK);
    CU_ASSERT_EQUAL(n, 4);
    CU_ASSERT_EQUAL(ids[2], 99);
    free(ids);
    CU_ASSERT_EQUAL(rn_tokenize(&c, "1 2 x3", 6, "p.txt", &ids, &n, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "p.txt"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "not an integer"));
    CU_ASSERT_EQUAL(rn_tokenize(&c, "1\n100", 5, "p.txt", &ids, &n, &err), RN_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "p.txt:2"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "vocabulary"));
    CU_ASSERT_EQUAL(rn_tokenize(&c, "-1", 2, "p", &ids, &n, &err), RN_EINPUT);
    CU_ASSERT_EQUAL(rn_tokenize(&c, "99999999999999999999", 20, "p", &ids, &n, &err), RN_EINPUT);
    CU_ASSERT_EQUAL(rn_tokenize(&c, " \n\t", 3, "p", &ids, &n, &err), RN_EINPUT);
    char piece[16];
    c.tokenizer = RN_TOK_BYTES;
    rn_token_piece(&c, '\n', piece, sizeof piece);
    CU_ASSERT_STRING_EQUAL(piece, "\\n");
    rn_token_piece(&c, RN_BOS, piece, sizeof piece);
    CU_ASSERT_STRING_EQUAL(piece, "<bos>");
    rn_token_piece(&c, 200, piece, sizeof piece);
    CU_ASSERT_STRING_EQUAL(piece, "\\xc8");
}

TH_TEST(test_sampler, "sampler")
{
    rn_sampler s;
    rn_error err;
    float lg[5] = { 0.1f, 2.0f, -1.0f, 1.9f, 0.0f };
    CU_ASSERT_EQUAL_FATAL(rn_sampler_init(&s, 5, 0.0f, 0.9f, 1, &err), RN_OK);
    CU_ASSERT_EQUAL(rn_sample(&s, lg), 1);
    rn_sampler_free(&s);
    /* top-p = 0.5 keeps only tokens 1 and 3 (p ≈ .40 and .36) */
    CU_ASSERT_EQUAL_FATAL(rn_sampler_init(&s, 5, 1.0f, 0.5f, 7, &err), RN_OK);
    int counts[5] = { 0 };
    for (int i = 0; i < 4000; i++) counts[rn_sample(&s, lg)]++;
    CU_ASSERT_EQUAL(counts[0] + counts[2] + counts[4], 0);
    CU_ASSERT(counts[1] > counts[3] && counts[3] > 1300);
    rn_sampler_free(&s);
    /* plain sampling frequencies follow softmax */
    CU_ASSERT_EQUAL_FATAL(rn_sampler_init(&s, 5, 1.0f, 1.0f, 3, &err), RN_OK);
    memset(counts, 0, sizeof counts);
    int N = 20000;
    for (int i = 0; i < N; i++) counts[rn_sample(&s, lg)]++;
    double z = 0;
    for (int i = 0; i < 5; i++) z += exp(lg[i]);
    for (int i = 0; i < 5; i++) CU_ASSERT(fabs(counts[i] / (double)N - exp(lg[i]) / z) < 0.015);
    rn_sampler_free(&s);
}

/* A near-uniform distribution with top_p < 1/V leaves no token above the
 * nucleus cut-off: the sampler must still return a token in [0, V). */
TH_TEST(test_sampler_tiny_top_p, "sampler with top_p below 1/V")
{
    enum { V = 257 };
    static float lg[V];
    rn_sampler s;
    rn_error err;
    CU_ASSERT_EQUAL_FATAL(rn_sampler_init(&s, V, 1.0f, 1e-6f, 5, &err), RN_OK);
    /* the nucleus of mass 1e-6 is the single most probable token */
    for (int i = 0; i < V; i++) lg[i] = 0.0f;
    lg[7] = 1e-3f;
    for (int i = 0; i < 50; i++) CU_ASSERT_EQUAL(rn_sample(&s, lg), 7);
    for (int i = 0; i < V; i++) lg[i] = NAN;
    int t = rn_sample(&s, lg);
    CU_ASSERT(t >= 0 && t < V);
    rn_sampler_free(&s);
}

/* Hooks: every wanted point is called once per layer and chunk with the
 * shapes of rn_runtime.h; a hook that edits v changes the logits as the
 * same edit of the weights would; a non-zero return stops with RN_EINTR. */
typedef struct {
    int calls[RN_HOOK_N], width[RN_HOOK_N], stop_at;
    float scale_v;
} hook_log;

static int log_hook(void *user, int point, int layer, float *data, const uint32_t *slots, int rows, int width,
                    int64_t pos0)
{
    hook_log *h = user;
    (void)layer; (void)pos0;
    h->calls[point]++;
    h->width[point] = width;
    if ((point == RN_HOOK_ADDR_READ || point == RN_HOOK_ADDR_WRITE) && !slots) return 1;
    if (point == RN_HOOK_V && h->scale_v != 1)
        for (int i = 0; i < rows * width; i++) data[i] *= h->scale_v;
    return h->stop_at == point;
}

TH_TEST(test_runtime_hooks, "hooks: every point per layer and chunk, an edit of v is a scaled W_v, a stop is RN_EINTR")
{
    rn_config c;
    small_config(&c, 0, 5, 2, 1.0f);
    rn_model m, m2;
    make_model(&m, &c, 31);
    rn_error err;
    enum { T = 20 };
    int tok[T];
    for (int t = 0; t < T; t++) tok[t] = (t * 7 + 3) % c.vocab_size;
    float *a = malloc(sizeof(float) * T * c.vocab_size), *b = malloc(sizeof(float) * T * c.vocab_size);
    rn_runtime *rt;
    CU_ASSERT_EQUAL_FATAL(rn_runtime_create(&m, 8, &rt, &err), RN_OK); /* 3 chunks */
    hook_log h = { .stop_at = -1, .scale_v = 1 };
    rn_hooks hk = { log_hook, &h, (1u << RN_HOOK_N) - 1, 0, { 0 } };
    CU_ASSERT_EQUAL_FATAL(rn_runtime_set_hooks(rt, &hk, &err), RN_OK);
    CU_ASSERT_EQUAL(rn_prefill(rt, tok, T, a, 1, &err), RN_OK);
    for (int p = 0; p < RN_HOOK_N; p++) /* the slot state: once per position and layer */
        CU_ASSERT_EQUAL(h.calls[p], p == RN_HOOK_LN_FINAL ? 3 : p == RN_HOOK_SLOT_STATE ? T * c.n_layers : 3 * c.n_layers);
    CU_ASSERT_EQUAL(h.width[RN_HOOK_SLOT_STATE], c.n_heads * c.top_k * (c.d_v + 1));
    CU_ASSERT_EQUAL(h.width[RN_HOOK_Q], c.n_heads * rn_config_dk(&c));
    CU_ASSERT_EQUAL(h.width[RN_HOOK_ADDR_READ], c.n_heads * c.top_k);
    CU_ASSERT_EQUAL(h.width[RN_HOOK_HEAD_OUT], c.n_heads * c.d_v);
    CU_ASSERT_EQUAL(h.width[RN_HOOK_MLP_OUT], c.d_model);
    /* v scaled by 2 in every layer == W_v scaled by 2 (the same function) */
    h.scale_v = 2;
    rn_runtime_reset(rt);
    CU_ASSERT_EQUAL(rn_prefill(rt, tok, T, a, 1, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(rn_model_create_zero(&m2, &c, &err), RN_OK);
    memcpy(m2.params, m.params, sizeof(rn_real) * (size_t)m.n_block);
    for (int l = 0; l < c.n_layers; l++)
        for (int64_t i = 0; i < (int64_t)c.n_heads * c.d_v * c.d_model; i++) m2.w.layer[l].wv[i] *= 2;
    rn_runtime *rt2;
    CU_ASSERT_EQUAL_FATAL(rn_runtime_create(&m2, 8, &rt2, &err), RN_OK);
    CU_ASSERT_EQUAL(rn_prefill(rt2, tok, T, b, 1, &err), RN_OK);
    double num = 0, den = 0;
    for (int i = 0; i < T * c.vocab_size; i++) num += (a[i] - b[i]) * (double)(a[i] - b[i]), den += (double)b[i] * b[i];
    CU_ASSERT(sqrt(num / den) < 1e-5);
    /* a stop */
    h.scale_v = 1;
    h.stop_at = RN_HOOK_RESID_MID;
    rn_runtime_reset(rt);
    CU_ASSERT_EQUAL(rn_prefill(rt, tok, T, a, 1, &err), RN_EINTR);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "stopped by a hook"));
    rn_runtime_free(rt); rn_runtime_free(rt2);
    rn_model_free(&m); rn_model_free(&m2);
    free(a); free(b);
}

/* The slot-state hook (RN_HOOK_SLOT_STATE): the slots it offers are the
 * read's; unedited, the position-by-position scan gives the plain run's
 * bits (with and without a slot intervention), and so does the threaded
 * scan that records them a chunk at a time (slot_rows), with the same rows;
 * resetting the read rows of a slot set from t0 on is ablate-slots of that
 * set from t0, bit for bit. */
typedef struct {
    const rn_config *c;
    int H, K, dv, reset_from, reset_head, bad_slots;
    uint32_t lo, hi;           /* reset slots lo..hi of reset_head (reset_from < 0: none) */
    uint32_t *read;            /* [T, H, K] of layer 1 from the ADDR_READ point */
    float *state;              /* [T, H, K, d_v + 1] of layer 1 from the SLOT_STATE point */
    int calls;                 /* SLOT_STATE calls */
} slot_log;

static int slot_hook(void *user, int point, int layer, float *data, const uint32_t *slots, int rows, int width,
                     int64_t pos0)
{
    slot_log *s = user;
    const int HK = s->H * s->K;
    if (point == RN_HOOK_ADDR_READ && layer == 1)
        memcpy(s->read + pos0 * HK, slots, sizeof *slots * (size_t)rows * HK);
    if (point != RN_HOOK_SLOT_STATE) return 0;
    s->calls++;
    if (width != HK * (s->dv + 1)) s->bad_slots++;
    if (layer == 1 && memcmp(slots, s->read + pos0 * HK, sizeof *slots * HK * rows)) s->bad_slots++;
    if (layer == 1) memcpy(s->state + pos0 * width, data, sizeof *data * width * rows);
    if (layer != 1 || s->reset_from < 0 || pos0 < s->reset_from) return 0;
    for (int j = 0; j < s->K; j++) {
        uint32_t sl = slots[s->reset_head * s->K + j];
        if (sl < s->lo || sl > s->hi) continue;
        float *row = data + ((size_t)s->reset_head * s->K + j) * (s->dv + 1);
        for (int i = 0; i < s->dv; i++) row[i] = 0;
        row[s->dv] = (float)(1.0 / (double)rn_config_slots(s->c));
    }
    return 0;
}

/* Logits [T, V] of tok with spec (NULL: none) and, with h, the hooks. */
static void run_slot_hooked(const rn_model *m, const int *tok, int T, const char *spec, rn_hooks *h, float *out)
{
    rn_error err = { 0 };
    rn_iv_set iv;
    rn_iv_init(&iv, &m->cfg);
    if (spec) CU_ASSERT_EQUAL_FATAL(rn_iv_add(&iv, spec, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(rn_iv_prepare(&iv, m, &err), RN_OK);
    rn_runtime *rt;
    CU_ASSERT_EQUAL_FATAL(rn_runtime_create(m, 8, &rt, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(rn_runtime_set_interventions(rt, spec ? &iv : NULL, &err), RN_OK);
    if (h) CU_ASSERT_EQUAL_FATAL(rn_runtime_set_hooks(rt, h, &err), RN_OK);
    CU_ASSERT_EQUAL(rn_prefill(rt, tok, T, out, 1, &err), RN_OK);
    rn_runtime_free(rt);
    rn_iv_free(&iv);
}

TH_TEST(test_runtime_slot_state_hook, "hooks: the slot state is the read's slots; unedited it changes no bit; a reset is ablate-slots")
{
    rn_config c;
    small_config(&c, 0, 5, 2, 1.0f);
    rn_model m;
    make_model(&m, &c, 37);
    enum { T = 20 };
    int tok[T];
    for (int t = 0; t < T; t++) tok[t] = (t * 11 + 5) % c.vocab_size;
    const size_t n = (size_t)T * c.vocab_size;
    float *plain = malloc(sizeof(float) * n), *hooked = malloc(sizeof(float) * n), *iv = malloc(sizeof(float) * n);
    const size_t HKr = (size_t)c.n_heads * c.top_k * (c.d_v + 1);
    slot_log s = { &c, c.n_heads, c.top_k, c.d_v, -1, 2, 0, 0, 0, malloc(sizeof(uint32_t) * T * c.n_heads * c.top_k),
                   malloc(sizeof(float) * T * HKr), 0 };
    float *by_pos = malloc(sizeof(float) * T * HKr);
    rn_hooks h = { slot_hook, &s, 1u << RN_HOOK_ADDR_READ | 1u << RN_HOOK_SLOT_STATE, 0, { 0 } };
    static const char spec[] = "ablate-slots 1.2:0-40@6-";
    run_slot_hooked(&m, tok, T, NULL, NULL, plain);
    run_slot_hooked(&m, tok, T, NULL, &h, hooked);
    CU_ASSERT_EQUAL(memcmp(plain, hooked, sizeof(float) * n), 0);
    CU_ASSERT_EQUAL(s.bad_slots, 0);
    CU_ASSERT_EQUAL(s.calls, T * c.n_layers);
    /* slot_rows: once per chunk of 8 and layer, the same rows, the same logits */
    memcpy(by_pos, s.state, sizeof(float) * T * HKr);
    h.slot_rows = 1, s.calls = 0;
    run_slot_hooked(&m, tok, T, NULL, &h, hooked);
    CU_ASSERT_EQUAL(memcmp(plain, hooked, sizeof(float) * n), 0);
    CU_ASSERT_EQUAL(memcmp(by_pos, s.state, sizeof(float) * T * HKr), 0);
    CU_ASSERT_EQUAL(s.calls, 3 * c.n_layers);
    CU_ASSERT_EQUAL(s.bad_slots, 0);
    h.slot_rows = 0;
    run_slot_hooked(&m, tok, T, spec, NULL, iv);
    run_slot_hooked(&m, tok, T, spec, &h, hooked);
    CU_ASSERT_EQUAL(memcmp(iv, hooked, sizeof(float) * n), 0);
    double d = 0;
    for (size_t i = 0; i < n; i++) d = fmax(d, fabs((double)iv[i] - plain[i]));
    CU_ASSERT(d > 1e-4); /* the ablation does something */
    s.reset_from = 6, s.lo = 0, s.hi = 40;
    run_slot_hooked(&m, tok, T, NULL, &h, hooked);
    CU_ASSERT_EQUAL(memcmp(iv, hooked, sizeof(float) * n), 0);
    CU_ASSERT_EQUAL(s.bad_slots, 0);
    /* the point on layer 1 alone (slot_layers): T calls, all at layer 1 (the
     * hook counts bad slots elsewhere by width only), the same edit's bits */
    CU_ASSERT_FATAL(c.n_layers > 1);
    h.slot_layers[0] = 1u << 1;
    s.calls = 0;
    run_slot_hooked(&m, tok, T, NULL, &h, hooked);
    CU_ASSERT_EQUAL(s.calls, T);
    CU_ASSERT_EQUAL(memcmp(iv, hooked, sizeof(float) * n), 0);
    CU_ASSERT_EQUAL(s.bad_slots, 0);
    h.slot_layers[0] = 1u << 0; /* layer 0 alone: layer 1's edit is not made */
    s.calls = 0;
    run_slot_hooked(&m, tok, T, NULL, &h, hooked);
    CU_ASSERT_EQUAL(s.calls, T);
    CU_ASSERT_EQUAL(memcmp(plain, hooked, sizeof(float) * n), 0);
    rn_model_free(&m);
    free(plain); free(hooked); free(iv); free(s.read); free(s.state); free(by_pos);
}
