/* test_cuda_bf16.c — the GPU trainer's --precision bf16 (rn_cuda_train.h:
 * bf16 products with FP32 accumulation, FP32 master weights, gradients and
 * moments) against its fp32 path and against an independent reference, the
 * CPU trainer on the model rounded to bf16 (rn_model_copy_bf16: the same
 * weights, FP32 activations).  Linked into the parity binary and into the
 * host emulation (tests/cuda/emu/), where the products widen bf16 operands
 * exactly (emu_gemm.c), so the emulation checks the rounding points, the
 * buffers and the indexing; the GPU checks its own tensor cores.
 *
 * Tolerances (docs/cuda.md, "Precision of every tensor"): bf16 keeps 8
 * significant bits (relative rounding ≤ 2^-9 ≈ 2e-3 per operand), and the
 * products' sums are FP32, so
 *   - one forward's loss: relative difference to fp32 < BF16_LOSS_TOL (1e-2);
 *   - each gradient tensor, on shapes that select every slot (K = M: no
 *     top-K set can flip): max|g_bf16 − g_fp32| / max|g_fp32| <
 *     BF16_GRAD_TOL (0.03; the worst tensor is printed); elsewhere a set
 *     that flips at a near-tie changes its row's attention gradients
 *     wholesale, so ‖g_bf16 − g_fp32‖₂ / ‖g_fp32‖₂ < BF16_GRAD_FLIP_TOL
 *     (0.4: catches a wrong operand or layout, which gives ~1);
 *   - tf32 against fp32 under the same loss and gradient bounds (GPU only
 *     in substance: the emulation computes tf32 in FP32);
 *   - the decoder's top-K sets: the share of (row, head) sets that differ
 *     is printed, and every differing set differs only at a near-tie: an
 *     address in one set and not the other has a weight within a factor
 *     e^BF16_TIE_TOL (e^0.25) of its own set's smallest;
 *   - the bf16 weights are, bit for bit, the host's rounding of the FP32
 *     master after create, AdamW (fused), a shard's update and set_state;
 *   - training curves: each step's loss within 2% of the fp32 run's (a few
 *     steps in the emulation; 300 steps, as 25-step means, on a GPU), and a
 *     checkpoint written in bf16 resumes in fp32 and the reverse.
 * Summary line: "cuda bf16: ...".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include "cuda_tests.h"

#include "rn_adamw.h"
#include "rn_bf16.h"
#include "rn_cuda_train.h"
#include "rn_device.h"
#include "rn_params.h"
#include "rn_precision.h"
#include "rn_train.h"
#include "rn_train_loop.h"

#define BF16_LOSS_TOL 1e-2
#define BF16_GRAD_TOL 0.03
#define BF16_GRAD_FLIP_TOL 0.4
#define BF16_TIE_TOL 0.25
#define BF16_CURVE_TOL 0.02

static double g_loss_rel_tf32, g_grad_tf32;
static double g_loss_rel, g_loss_rel_cpu, g_grad, g_grad_cpu, g_grad_flip, g_grad_flip_cpu, g_tie_gap, g_curve, g_curve_gpu;
static long g_sets, g_sets_differ, g_tensors;
static char g_grad_name[96];

/* Shapes of the one-step comparison (U, d_p, K, Kr, CAPE, tied, γ); the
 * last two select every slot (K = M = d_p^U), so no top-K set can flip. */
typedef struct { int U, dp, K, Kr, cape, tied; float gamma; } bshape;
static const bshape g_bshapes[] = {
    { 2, 8, 4, 4, 0, 1, 1.0f }, { 3, 4, 8, 16, 1, 0, 2.0f }, { 1, 16, 4, 2, 1, 0, 0.5f },
    { 1, 4, 4, 4, 1, 0, 1.0f }, { 2, 4, 16, 16, 0, 1, 0.5f },
};
#define N_BSHAPES (int)(sizeof g_bshapes / sizeof g_bshapes[0])

/* Is x in a[0..k)? */
static int has(const uint32_t *a, int k, uint32_t x)
{
    for (int i = 0; i < k; i++)
        if (a[i] == x) return 1;
    return 0;
}

/* ln(w / the smallest of the set's weights) for address x of set (a, w). */
static double gap_to_min(const uint32_t *a, const float *w, int k, uint32_t x)
{
    double mn = INFINITY, wx = 0;
    for (int i = 0; i < k; i++) {
        mn = fmin(mn, fmax((double)w[i], 1e-38));
        if (a[i] == x) wx = fmax((double)w[i], 1e-38);
    }
    return log(wx / mn);
}

/* Compare the top-K sets of layer l (writes or reads) of the fp32 and the
 * bf16 trainer: count differing sets; each address in one set only must be
 * a near-tie in its own set. */
static void compare_topk(rn_cuda_trainer *gf, rn_cuda_trainer *gb, int l, int writes, int rows, int H, int K)
{
    const size_t cnt = (size_t)rows * H * K;
    uint32_t *af = malloc(sizeof(uint32_t) * cnt), *ab = malloc(sizeof(uint32_t) * cnt);
    float *wf = malloc(sizeof(float) * cnt), *wb = malloc(sizeof(float) * cnt);
    rn_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(rn_cuda_trainer_topk(gf, l, writes, af, wf, &err), RN_OK);
    CU_ASSERT_EQUAL_FATAL(rn_cuda_trainer_topk(gb, l, writes, ab, wb, &err), RN_OK);
    for (size_t s = 0; s < (size_t)rows * H; s++) {
        const uint32_t *sf = af + s * K, *sb = ab + s * K;
        int differ = 0;
        for (int i = 0; i < K; i++) {
            if (!has(sb, K, sf[i])) {
                differ = 1;
                double g = gap_to_min(sf, wf + s * K, K, sf[i]);
                g_tie_gap = fmax(g_tie_gap, g);
                CU_ASSERT(g < BF16_TIE_TOL);
            }
            if (!has(sf, K, sb[i])) {
                differ = 1;
                double g = gap_to_min(sb, wb + s * K, K, sb[i]);
                g_tie_gap = fmax(g_tie_gap, g);
                CU_ASSERT(g < BF16_TIE_TOL);
            }
        }
        g_sets++;
        g_sets_differ += differ;
    }
    free(af); free(ab); free(wf); free(wb);
}

/* The per-tensor relative error of gradient g against reference ref: where
 * every slot is selected (full: K = M for reads and writes, no top-K set
 * can differ) max|g − r| / max|r| < BF16_GRAD_TOL, the rounding alone;
 * else ‖g − r‖₂ / ‖r‖₂ < BF16_GRAD_FLIP_TOL, since a set that flips at a
 * near-tie changes its row's attention gradients wholesale.  *worst keeps
 * the worst (and, when named, its tensor's name). */
static void compare_grads(const rn_config *c, const float *g, const float *ref, int si, int full, double *worst,
                          int named)
{
    const int nt = rn_params_count_tensors(c);
    for (int i = 0; i < nt; i++) {
        rn_tensor_desc t;
        rn_params_tensor(c, i, &t);
        const float *a = g + t.offset, *b = ref + t.offset;
        double e;
        if (full) {
            e = cuda_test_rel(a, b, t.numel);
        } else {
            double d2 = 0, r2 = 0;
            for (int64_t j = 0; j < t.numel; j++) {
                d2 += ((double)a[j] - b[j]) * ((double)a[j] - b[j]);
                r2 += (double)b[j] * b[j];
            }
            e = r2 > 0 ? sqrt(d2 / r2) : sqrt(d2);
        }
        const double tol = full ? BF16_GRAD_TOL : BF16_GRAD_FLIP_TOL;
        if (named) g_tensors++;
        if (e > *worst) {
            *worst = e;
            if (named && full) snprintf(g_grad_name, sizeof g_grad_name, "%s (shape %d)", t.name, si);
        }
        if (!(e < tol)) fprintf(stderr, "shape %d: %s bf16 gradient relative error %.3g\n", si, t.name, e);
        CU_ASSERT(e < tol);
    }
}

/* One forward and backward: the bf16 GPU trainer against the fp32 GPU
 * trainer (loss, every gradient, top-K sets) and against the CPU trainer
 * on the bf16-rounded model. */
static void test_bf16_one_step(void)
{
    rn_rng r;
    rn_rng_seed(&r, 41);
    const double eps_g = 0.01;
    for (int si = 0; si < N_BSHAPES; si++) {
        const bshape *sh = &g_bshapes[si];
        rn_model m, mb;
        CU_ASSERT_EQUAL_FATAL(cuda_test_model(&m, sh->U, sh->dp, sh->K, sh->cape, sh->tied, sh->gamma, 700 + si), RN_OK);
        rn_error err = { 0 };
        CU_ASSERT_EQUAL_FATAL(rn_model_copy_bf16(&mb, &m, &err), RN_OK);
        const int B = 3, T = 40, n = B * T, V = m.cfg.vocab_size, H = m.cfg.n_heads;
        int tok[120], tgt[120];
        cuda_test_batch(&r, V, n, tok, tgt);
        rn_cuda_trainer *gf = NULL, *gb = NULL, *gt = NULL;
        rn_trainer *ct = NULL;
        CU_ASSERT_EQUAL_FATAL(rn_trainer_create_kr(&ct, &mb, n, n, eps_g, sh->Kr, &err), RN_OK);
        if (rn_cuda_trainer_create(&gf, &m, n, n, eps_g, sh->K, sh->Kr, RN_PREC_FP32, &err) ||
            rn_cuda_trainer_create(&gb, &m, n, n, eps_g, sh->K, sh->Kr, RN_PREC_BF16, &err) ||
            rn_cuda_trainer_create(&gt, &m, n, n, eps_g, sh->K, sh->Kr, RN_PREC_TF32, &err) ||
            rn_cuda_trainer_set_topk(gt, sh->K, sh->Kr, &err) ||
            rn_cuda_trainer_set_topk(gf, sh->K, sh->Kr, &err) || rn_cuda_trainer_set_topk(gb, sh->K, sh->Kr, &err)) {
            fprintf(stderr, "cuda trainer: %s\n", err.msg);
            CU_FAIL_FATAL("rn_cuda_trainer_create");
        }
        double lf, lb, lc, lt;
        CU_ASSERT_EQUAL(rn_cuda_trainer_forward(gf, tok, tgt, B, T, &lf, &err), RN_OK);
        CU_ASSERT_EQUAL(rn_cuda_trainer_forward(gt, tok, tgt, B, T, &lt, &err), RN_OK);
        g_loss_rel_tf32 = fmax(g_loss_rel_tf32, fabs(lt - lf) / fabs(lf));
        CU_ASSERT(fabs(lt - lf) < BF16_LOSS_TOL * fabs(lf));
        CU_ASSERT_EQUAL(rn_cuda_trainer_forward(gb, tok, tgt, B, T, &lb, &err), RN_OK);
        CU_ASSERT_EQUAL(rn_trainer_forward(ct, tok, tgt, B, T, &lc, &err), RN_OK);
        double e = fabs(lb - lf) / fabs(lf), ec = fabs(lb - lc) / fabs(lc);
        g_loss_rel = fmax(g_loss_rel, e);
        g_loss_rel_cpu = fmax(g_loss_rel_cpu, ec);
        CU_ASSERT(e < BF16_LOSS_TOL);
        CU_ASSERT(ec < BF16_LOSS_TOL);
        /* the product inputs are rounded, so the bf16 loss is not the
         * rounded-weights CPU loss exactly (a check that they are applied) */
        CU_ASSERT(lb != lc);
        for (int l = 0; l < m.cfg.n_layers; l++) {
            compare_topk(gf, gb, l, 1, n, H, sh->K);
            compare_topk(gf, gb, l, 0, n, H, sh->Kr);
        }
        CU_ASSERT_EQUAL(rn_cuda_trainer_backward(gf, 1.0, &err), RN_OK);
        CU_ASSERT_EQUAL(rn_cuda_trainer_backward(gb, 1.0, &err), RN_OK);
        CU_ASSERT_EQUAL(rn_cuda_trainer_backward(gt, 1.0, &err), RN_OK);
        rn_trainer_backward(ct, 1.0);
        float *g1 = malloc(sizeof(float) * (size_t)m.n_block), *g2 = malloc(sizeof(float) * (size_t)m.n_block);
        CU_ASSERT_EQUAL_FATAL(rn_cuda_trainer_grads(gf, g1, &err), RN_OK);
        CU_ASSERT_EQUAL_FATAL(rn_cuda_trainer_grads(gb, g2, &err), RN_OK);
        const int full = rn_config_slots(&m.cfg) == sh->K && sh->K == sh->Kr;
        compare_grads(&m.cfg, g2, g1, si, full, full ? &g_grad : &g_grad_flip, 1);
        compare_grads(&m.cfg, g2, rn_trainer_grads(ct), si, full, full ? &g_grad_cpu : &g_grad_flip_cpu, 0);
        /* tf32 (10 significant bits) under the same bounds; in the
         * emulation it is fp32 itself */
        CU_ASSERT_EQUAL_FATAL(rn_cuda_trainer_grads(gt, g2, &err), RN_OK);
        compare_grads(&m.cfg, g2, g1, si, full, &g_grad_tf32, 0);
        free(g1);
        free(g2);
        rn_trainer_free(ct);
        rn_cuda_trainer_free(gf);
        rn_cuda_trainer_free(gb);
        rn_cuda_trainer_free(gt);
        rn_model_free(&mb);
        rn_model_free(&m);
    }
}

/* The trainer's bf16 weights == the host's rounding of params[0..n). */
static int weights_are_rounding(rn_cuda_trainer *g, const float *params, int64_t n)
{
    uint16_t *wb = malloc(sizeof(uint16_t) * (size_t)n);
    rn_error err = { 0 };
    int ok = rn_cuda_trainer_weights_bf16(g, wb, &err) == RN_OK;
    for (int64_t i = 0; ok && i < n; i++) ok = wb[i] == rn_bf16_from_f32(params[i]);
    free(wb);
    return ok;
}

/* The bf16 copy follows the FP32 master: after create, a fused AdamW step,
 * a shard's update (the collectives' path) and set_state. */
static void test_bf16_shadow(void)
{
    rn_model m;
    CU_ASSERT_EQUAL_FATAL(cuda_test_model(&m, 2, 8, 4, 1, 0, 1.0f, 77), RN_OK);
    const int B = 2, T = 32, n = B * T, V = m.cfg.vocab_size;
    const int64_t nb = m.n_block;
    rn_error err = { 0 };
    rn_cuda_trainer *g = NULL;
    CU_ASSERT_EQUAL_FATAL(rn_cuda_trainer_create(&g, &m, n, n, 0.01, 0, 0, RN_PREC_BF16, &err), RN_OK);
    float *p = malloc(sizeof(float) * 3 * (size_t)nb);
    CU_ASSERT(weights_are_rounding(g, m.params, nb));
    rn_adamw_opts o;
    rn_adamw_defaults(&o);
    o.lr = 1e-2;
    rn_rng r;
    rn_rng_seed(&r, 42);
    int tok[64], tgt[64];
    double loss;
    for (int step = 0; step < 2; step++) {
        cuda_test_batch(&r, V, n, tok, tgt);
        CU_ASSERT_EQUAL(rn_cuda_trainer_zero_grads(g, &err), RN_OK);
        CU_ASSERT_EQUAL(rn_cuda_trainer_forward(g, tok, tgt, B, T, &loss, &err), RN_OK);
        CU_ASSERT_EQUAL(rn_cuda_trainer_backward(g, 1.0, &err), RN_OK);
        /* step 0: the whole block (fused); step 1: two shards, as ranks do */
        if (step == 0) {
            CU_ASSERT_EQUAL(rn_cuda_trainer_adamw(g, &o, step, o.lr, 1.0, &err), RN_OK);
        } else {
            float *pp, *gg, *m1, *m2;
            int64_t len;
            rn_cuda_trainer_block(g, &pp, &gg, &m1, &m2, &len);
            CU_ASSERT_EQUAL(len, nb);
            CU_ASSERT_EQUAL(rn_cuda_trainer_adamw_range(g, gg, &o, step, o.lr, 1.0, 0, nb / 3, &err), RN_OK);
            CU_ASSERT_EQUAL(rn_cuda_trainer_adamw_range(g, gg + nb / 3, &o, step, o.lr, 1.0, nb / 3, nb, &err), RN_OK);
        }
        CU_ASSERT_EQUAL(rn_cuda_trainer_get_state(g, p, NULL, NULL, &err), RN_OK);
        CU_ASSERT(memcmp(p, m.params, sizeof(float) * (size_t)nb) != 0); /* the step moved them */
        CU_ASSERT(weights_are_rounding(g, p, nb));
    }
    for (int64_t i = 0; i < nb; i++) p[i] = m.params[i] * 0.5f;
    memset(p + nb, 0, sizeof(float) * 2 * (size_t)nb);
    CU_ASSERT_EQUAL(rn_cuda_trainer_set_state(g, p, p + nb, p + 2 * nb, &err), RN_OK);
    CU_ASSERT(weights_are_rounding(g, p, nb));
    rn_cuda_trainer_free(g);
    /* fp32 and tf32 trainers have no bf16 weights */
    CU_ASSERT_EQUAL_FATAL(rn_cuda_trainer_create(&g, &m, n, n, 0.01, 0, 0, RN_PREC_TF32, &err), RN_OK);
    CU_ASSERT_EQUAL(rn_cuda_trainer_weights_bf16(g, (uint16_t *)p, &err), RN_EINPUT);
    rn_cuda_trainer_free(g);
    CU_ASSERT_EQUAL(rn_cuda_trainer_create(&g, &m, n, n, 0.01, 0, 0, 7, &err), RN_EINPUT);
    CU_ASSERT_PTR_NULL(g);
    free(p);
    rn_model_free(&m);
}

/* buf[256] = this process's scratch file /tmp/rn_cuda_bf16_PID_what_name. */
static void tmp_path(char *buf, const char *what, const char *name)
{
    snprintf(buf, 256, "/tmp/rn_cuda_bf16_%d_%s_%s", (int)getpid(), what, name);
}

/* Steps [from, to) of a against b: relative difference of each step loss
 * (window 1) or of each `window`-step mean, the worst into *worst; each
 * below BF16_CURVE_TOL. */
static void compare_curves(const cuda_loss_log *a, const cuda_loss_log *b, int from, int to, int window,
                           double *worst)
{
    for (int s = from; s + window <= to; s += window) {
        double x = 0, y = 0;
        for (int i = s; i < s + window; i++) {
            x += a->loss[i];
            y += b->loss[i];
        }
        double e = fabs(x - y) / fabs(y);
        *worst = fmax(*worst, e);
        if (!(e < BF16_CURVE_TOL))
            fprintf(stderr, "bf16 curve: steps %d-%d mean loss %.5f vs fp32 %.5f\n", s + 1, s + window, x / window,
                    y / window);
        CU_ASSERT(e < BF16_CURVE_TOL);
    }
}

/* The training loop on cuda in bf16 against fp32 (MQAR, annealed K,
 * accumulation, evaluation, checkpoints), and a checkpoint of either
 * precision resumed in the other. */
static void test_bf16_loop(void)
{
    rn_config c;
    rn_train_opts o;
    CU_ASSERT_EQUAL_FATAL(cuda_test_loop_config(&c, &o), RN_OK);
    char f32[256], b16[256], b2f[256], f2b[256];
    tmp_path(f32, "loop", "f32.bin");
    tmp_path(b16, "loop", "b16.bin");
    tmp_path(b2f, "loop", "b2f.bin");
    tmp_path(f2b, "loop", "f2b.bin");
    static cuda_loss_log lf, lb, lx, ly;
    memset(&lf, 0, sizeof lf); memset(&lb, 0, sizeof lb); memset(&lx, 0, sizeof lx); memset(&ly, 0, sizeof ly);
    rn_train_opts of = o, ob = o;
    of.precision = RN_PREC_FP32;
    ob.precision = RN_PREC_BF16;
    CU_ASSERT_EQUAL_FATAL(cuda_test_loop_run(&c, &of, RN_DEVICE_CUDA, 0, NULL, f32, &lf), RN_OK);
    CU_ASSERT_EQUAL_FATAL(cuda_test_loop_run(&c, &ob, RN_DEVICE_CUDA, 0, NULL, b16, &lb), RN_OK);
    CU_ASSERT_EQUAL(lf.n, 8);
    CU_ASSERT_EQUAL(lb.n, 8);
    compare_curves(&lb, &lf, 0, 8, 1, &g_curve);
    /* bf16 for 4 steps, then fp32 resumes its checkpoint; and the reverse */
    CU_ASSERT_EQUAL_FATAL(cuda_test_split_run(&c, &ob, RN_DEVICE_CUDA, &of, RN_DEVICE_CUDA, b2f, &lx), RN_OK);
    CU_ASSERT_EQUAL_FATAL(cuda_test_split_run(&c, &of, RN_DEVICE_CUDA, &ob, RN_DEVICE_CUDA, f2b, &ly), RN_OK);
    CU_ASSERT_EQUAL(lx.n, 8);
    CU_ASSERT_EQUAL(ly.n, 8);
    for (int i = 0; i < 4; i++) { /* the first halves are the plain runs' */
        CU_ASSERT_EQUAL(lx.loss[i], lb.loss[i]);
        CU_ASSERT_EQUAL(ly.loss[i], lf.loss[i]);
    }
    compare_curves(&lx, &lf, 4, 8, 1, &g_curve);
    compare_curves(&ly, &lf, 4, 8, 1, &g_curve);
    /* the resumed halves ran in the other precision: not the plain runs' */
    CU_ASSERT(memcmp(lx.loss + 4, lb.loss + 4, 4 * sizeof(double)) != 0);
    CU_ASSERT(memcmp(ly.loss + 4, lf.loss + 4, 4 * sizeof(double)) != 0);
    cuda_test_remove_run(f32);
    cuda_test_remove_run(b16);
    cuda_test_remove_run(b2f);
    cuda_test_remove_run(f2b);
}

/* eval --device cuda --precision bf16: the text loss of the bf16 GPU
 * forward against the CPU's on the bf16-rounded model. */
static void test_bf16_eval(void)
{
    rn_config c;
    rn_model m, mb;
    rn_error err = { 0 };
    rn_config_default(&c);
    CU_ASSERT_EQUAL_FATAL(rn_config_parse_text(&c, "vocab_size = 257\ntokenizer = bytes\nd_model = 32\nn_layers = 2\n"
                                               "n_heads = 4\nd_p = 4\norder = 2\nd_v = 8\ntop_k = 4\nd_ff = 48\n",
                                               "bf16eval.cfg", NULL, NULL, &err), RN_OK);
    int mrc = rn_model_create_random(&m, &c, 43, &err);
    if (mrc) fprintf(stderr, "bf16 eval model: %s\n", err.msg);
    CU_ASSERT_EQUAL_FATAL(mrc, RN_OK);
    CU_ASSERT_EQUAL_FATAL(rn_model_copy_bf16(&mb, &m, &err), RN_OK);
    char data[256];
    tmp_path(data, "eval", "corpus.txt");
    FILE *f = fopen(data, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    for (int i = 0; i < 200; i++) fprintf(f, "line %d of the bf16 held-out corpus.\n", i);
    fclose(f);
    rn_text t;
    CU_ASSERT_EQUAL_FATAL(rn_text_load(&t, data, 0.2, 32, &err), RN_OK);
    rn_eval_ctl ctl = { NULL, NULL, NULL, RN_PREC_BF16 };
    double lc, bc, lg, bg;
    CU_ASSERT_EQUAL(rn_eval_text(&mb, RN_DEVICE_CPU, &t, 32, 4, 2, &lc, &bc, NULL, &err), RN_OK);
    int rc = rn_eval_text(&m, RN_DEVICE_CUDA, &t, 32, 4, 2, &lg, &bg, &ctl, &err);
    if (rc) fprintf(stderr, "eval text (cuda bf16): %s\n", err.msg);
    CU_ASSERT_EQUAL(rc, RN_OK);
    CU_ASSERT(fabs(lg - lc) < BF16_LOSS_TOL * fabs(lc));
    CU_ASSERT(lg != lc);
    rn_text_free(&t);
    remove(data);
    rn_model_free(&mb);
    rn_model_free(&m);
}

/* A 300-step run of config `cfg` on cuda in bf16 and in fp32: every
 * 25-step mean loss within 2%.  GPU only (the emulation would take hours). */
static void curve_300(const char *what, const rn_config *c, const rn_train_opts *o)
{
    char f32[256], b16[256];
    tmp_path(f32, what, "f32.bin");
    tmp_path(b16, what, "b16.bin");
    static cuda_loss_log lf, lb;
    memset(&lf, 0, sizeof lf);
    memset(&lb, 0, sizeof lb);
    rn_train_opts of = *o, ob = *o;
    of.precision = RN_PREC_FP32;
    ob.precision = RN_PREC_BF16;
    CU_ASSERT_EQUAL_FATAL(cuda_test_loop_run(c, &of, RN_DEVICE_CUDA, 0, NULL, f32, &lf), RN_OK);
    CU_ASSERT_EQUAL_FATAL(cuda_test_loop_run(c, &ob, RN_DEVICE_CUDA, 0, NULL, b16, &lb), RN_OK);
    CU_ASSERT_EQUAL(lf.n, 300);
    CU_ASSERT_EQUAL(lb.n, 300);
    double worst = 0;
    compare_curves(&lb, &lf, 0, 300, 25, &worst);
    printf("cuda bf16 300-step curve (%s): last 25-step mean loss bf16 %.4f fp32 %.4f; worst 25-step relative "
           "difference %.3g\n", what, lb.loss[299], lf.loss[299], worst);
    g_curve_gpu = fmax(g_curve_gpu, worst);
    cuda_test_remove_run(f32);
    cuda_test_remove_run(b16);
}

/* The MQAR sample config (samples/configs/mqar.cfg: gpu-check runs in the
 * bundle, make test-cuda in the source tree, both holding it), 300 steps
 * with gpu-check's CLI overrides (K annealed from 32). */
static void test_bf16_curve_mqar(void)
{
    rn_config c;
    rn_train_opts o;
    rn_error err = { 0 };
    rn_config_default(&c);
    rn_train_opts_default(&o, RN_TASK_MQAR);
    int rc = rn_config_load_file(&c, "samples/configs/mqar.cfg", rn_train_opts_set, &o, &err);
    if (rc) fprintf(stderr, "bf16 curve: %s\n", err.msg);
    CU_ASSERT_EQUAL_FATAL(rc, RN_OK);
    const char *over = "steps = 300\ntop_k_start = 32\nmqar_first_steps = 100\nwarmup = 30\neval_every = 1000\n"
                       "ckpt_every = 0\nlog_every = 1\n";
    CU_ASSERT_EQUAL_FATAL(rn_config_parse_text(&c, over, "curve.cfg", rn_train_opts_set, &o, &err), RN_OK);
    curve_300("mqar", &c, &o);
}

/* Text: a byte-level model on a generated corpus, 300 steps. */
static void test_bf16_curve_text(void)
{
    rn_config c;
    rn_train_opts o;
    rn_error err = { 0 };
    rn_config_default(&c);
    rn_train_opts_default(&o, RN_TASK_TEXT);
    const char *cfg = "vocab_size = 257\ntokenizer = bytes\nd_model = 128\nn_layers = 2\nn_heads = 4\n"
                      "d_p = 8\norder = 2\nd_v = 32\ntop_k = 8\nd_ff = 256\ncape = first:1\ngamma = 0.5\n"
                      "steps = 300\nbatch = 8\nseq_len = 128\nlr = 3e-3\nwarmup = 30\neval_every = 1000\n"
                      "eval_windows = 4\nckpt_every = 0\nlog_every = 1\nval_frac = 0.1\n";
    CU_ASSERT_EQUAL_FATAL(rn_config_parse_text(&c, cfg, "curvetext.cfg", rn_train_opts_set, &o, &err), RN_OK);
    char data[256];
    tmp_path(data, "curve", "text.txt");
    FILE *f = fopen(data, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    rn_rng r;
    rn_rng_seed(&r, 44);
    static const char *w[] = { "the", "scribe", "reader", "went", "home", "out", "and", "wrote", "a", "verse" };
    for (int i = 0; i < 20000; i++) fprintf(f, "%s%s", w[rn_rng_u64(&r) % 10], i % 12 == 11 ? ".\n" : " ");
    fclose(f);
    snprintf(o.data, sizeof o.data, "%s", data);
    curve_300("text", &c, &o);
    remove(data);
}

void rn_cuda_bf16_tests(CU_pSuite s)
{
    CU_add_test(s, "bf16 GPU trainer: loss, gradients, top-K against fp32 and the CPU on bf16 weights",
                test_bf16_one_step);
    CU_add_test(s, "bf16 GPU trainer: the bf16 weights follow the FP32 master", test_bf16_shadow);
    CU_add_test(s, "bf16 train loop on cuda: losses within 2% of fp32; checkpoints resume across precisions",
                test_bf16_loop);
    CU_add_test(s, "eval --device cuda --precision bf16: text loss near the CPU's on bf16 weights", test_bf16_eval);
}

void rn_cuda_bf16_gpu_tests(CU_pSuite s)
{
    CU_add_test(s, "bf16 300-step curve, MQAR sample config: within 2% of fp32", test_bf16_curve_mqar);
    CU_add_test(s, "bf16 300-step curve, text: within 2% of fp32", test_bf16_curve_text);
}

void rn_cuda_bf16_summary(void)
{
    printf("cuda bf16: first-forward loss vs fp32 worst relative %.3g (vs CPU on bf16 weights %.3g); "
           "%ld tensors, worst gradient relative error with every slot selected %.3g (%s; vs CPU on bf16 "
           "weights %.3g), with top-K flips (L2) %.3g (vs CPU %.3g); "
           "top-K sets differing %ld of %ld (%.3g%%), worst near-tie gap %.3g; short-run step loss worst "
           "relative %.3g; 300-step curves worst %.3g; tf32 vs fp32: loss %.3g, gradients %.3g\n",
           g_loss_rel, g_loss_rel_cpu, g_tensors, g_grad, g_grad_name[0] ? g_grad_name : "-", g_grad_cpu,
           g_grad_flip, g_grad_flip_cpu,
           g_sets_differ, g_sets, g_sets ? 100.0 * (double)g_sets_differ / (double)g_sets : 0.0, g_tie_gap,
           g_curve, g_curve_gpu, g_loss_rel_tf32, g_grad_tf32);
}
