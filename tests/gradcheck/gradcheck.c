/* gradcheck.c — the double-precision gradient check of the training
 * backward (built with -DRN_DOUBLE by mk/train.mk, its own CUnit main).
 *
 * Every parameter's analytic gradient is compared with a central finite
 * difference of the loss, on tiny models with γ ∈ {0, 0.5, 1, 2}, CAPE on
 * and off, tied and untied heads, proxy gradient off (ε_g = 0).  A second
 * test checks the proxy derivative against finite differences of the
 * smoothed decay (ε_g + (1−ε_g)(1−w))^γ.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "rn_layers.h"
#include "rn_rng.h"
#include "rn_train.h"

static double loss_of(rn_trainer *tr, const int *tok, const int *tgt, int B, int T)
{
    double loss = 0;
    rn_error err;
    if (rn_trainer_forward(tr, tok, tgt, B, T, &loss, &err)) {
        fprintf(stderr, "forward failed: %s\n", err.msg);
        return NAN;
    }
    return loss;
}

/* Max relative error over all parameters for one configuration; read_k
 * (0 = top_k) sets the reads' top-K apart from the writes' (annealing). */
static double check_model(double gamma, int cape, int tied, uint64_t seed, int read_k, int *n_checked)
{
    rn_config c;
    rn_config_default(&c);
    c.vocab_size = 11; c.d_model = 8; c.n_layers = 2; c.n_heads = 2;
    c.d_p = 3; c.order = 2; c.d_v = 4; c.top_k = 3; c.d_ff = 12;
    c.gamma = (float)gamma; c.tau = 1.0f; c.eps = 1e-3f; c.norm_eps = 1e-5f;
    c.tie_embeddings = tied;
    c.tokenizer = RN_TOK_IDS;
    memset(c.cape_mask, 0, sizeof c.cape_mask);
    if (cape) { c.cape_mask[0] = 3; c.cape_mask[1] = 1; }
    rn_model m;
    rn_error err;
    if (rn_model_create_random(&m, &c, seed, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    /* Larger, varied parameters than the default init so every path carries
     * a gradient of a useful size. */
    rn_rng rng;
    rn_rng_seed(&rng, seed + 17);
    int nt = rn_params_count_tensors(&c);
    rn_tensor_desc d[64];
    rn_params_layout(&c, d);
    for (int i = 0; i < nt; i++)
        for (int64_t j = 0; j < d[i].numel; j++) {
            rn_real *p = m.params + d[i].offset + j;
            if (d[i].kind == RN_T_NORM) *p = 1 + 0.3 * rn_rng_normal(&rng);
            else if (d[i].kind == RN_T_ALPHA) *p = 0.3 * rn_rng_normal(&rng);
            else *p = 0.5 * rn_rng_normal(&rng);
        }
    enum { B = 2, T = 7 };
    int tok[B * T], tgt[B * T];
    for (int i = 0; i < B * T; i++) {
        tok[i] = (int)rn_rng_below(&rng, c.vocab_size);
        tgt[i] = (i % 3 == 1) ? RN_IGNORE : (int)rn_rng_below(&rng, c.vocab_size);
    }
    rn_trainer *tr;
    if (rn_trainer_create_kr(&tr, &m, B * T, B * T, 0.0, read_k, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
    loss_of(tr, tok, tgt, B, T);
    rn_trainer_backward(tr, 1.0);
    const rn_real *g = rn_trainer_grads(tr);
    double worst = 0, h = 1e-5;
    for (int i = 0; i < nt; i++)
        for (int64_t j = 0; j < d[i].numel; j++) {
            int64_t k = d[i].offset + j;
            rn_real save = m.params[k];
            m.params[k] = save + h;
            double lp = loss_of(tr, tok, tgt, B, T);
            m.params[k] = save - h;
            double lm = loss_of(tr, tok, tgt, B, T);
            m.params[k] = save;
            double fd = (lp - lm) / (2 * h), an = g[k];
            double rel = fabs(fd - an) / fmax(fabs(fd) + fabs(an), 1e-7);
            if (rel > worst) {
                worst = rel;
                if (rel > 1e-5)
                    fprintf(stderr, "\n  gamma=%g cape=%d tied=%d %s[%lld]: analytic %.10g fd %.10g rel %.3g",
                            gamma, cape, tied, d[i].name, (long long)j, an, fd, rel);
            }
            (*n_checked)++;
        }
    rn_trainer_free(tr);
    rn_model_free(&m);
    return worst;
}

static void test_gradients_match_finite_differences(void)
{
    const double gammas[] = { 0, 0.5, 1, 2 };
    int n = 0;
    double worst = 0;
    for (int gi = 0; gi < 4; gi++)
        for (int cape = 0; cape < 2; cape++)
            for (int tied = 0; tied < 2; tied++) {
                double e = check_model(gammas[gi], cape, tied, 100 + gi * 4 + cape * 2 + tied, 0, &n);
                if (e > worst) worst = e;
            }
    /* reads with more slots than the writes (7 and all 9 of M = 9, K = 3) */
    for (int cape = 0; cape < 2; cape++)
        for (int rk = 7; rk <= 9; rk += 2) {
            double e = check_model(1, cape, 0, 200 + cape * 2 + rk, rk, &n);
            if (e > worst) worst = e;
        }
    fprintf(stderr, "\n  %d parameter gradients checked, max relative error %.3g\n", n, worst);
    CU_ASSERT(n > 10000);
    CU_ASSERT(worst < 1e-5);
}

/* The proxy derivative equals d/dw (ε + (1−ε)(1−w))^γ (by central
 * differences), and with ε = 0 the exact derivative of (1−w)^γ. */
static void test_proxy_gradient(void)
{
    const double gammas[] = { 0, 0.5, 1, 1.5, 2, 3 }, epss[] = { 0, 0.01, 0.1 };
    double worst = 0;
    for (int gi = 0; gi < 6; gi++)
        for (int ei = 0; ei < 3; ei++)
            for (double w = 0.02; w < 0.99; w += 0.07) {
                double gm = gammas[gi], e = epss[ei], h = 1e-6;
                double f1 = pow(e + (1 - e) * (1 - (w + h)), gm), f0 = pow(e + (1 - e) * (1 - (w - h)), gm);
                double fd = (f1 - f0) / (2 * h), an = rn_pdma_decay_grad(w, gm, e);
                double rel = fabs(fd - an) / fmax(fabs(fd) + fabs(an), 1e-9);
                if (rel > worst) worst = rel;
                /* forward value is always the exact (1−w)^γ */
                CU_ASSERT(fabs(rn_pdma_decay(w, gm) - pow(1 - w, gm)) < 1e-12);
            }
    CU_ASSERT(worst < 1e-6);
    /* near w = 1 with γ < 1 the exact slope explodes; the proxy stays finite */
    double g = rn_pdma_decay_grad(1.0, 0.5, 0.01);
    CU_ASSERT(isfinite(g) && fabs(g) < 10);
}

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS) return 1;
    CU_pSuite s = CU_add_suite("gradcheck_double", NULL, NULL);
    CU_add_test(s, "every parameter gradient matches central differences", test_gradients_match_finite_differences);
    CU_add_test(s, "proxy gradient of the PDMA decay", test_proxy_gradient);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned fails = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    CU_cleanup_registry();
    return fails ? 1 : 0;
}
