/* test_analysis_attr.c — attribution: a hand-worked example, and on a small
 * random model the attributed weights times the values the layer computes
 * reproduce the read output of an independent dense PDMA. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "an_attribute.h"
#include "rn_layers.h"
#include "rn_model.h"
#include "rn_runtime.h"
#include "th.h"

/* M = 2, γ = 1, ε = 0.  t0 and t1 write slot 0 with 0.5; t1 reads slot 0
 * with 1.  z = ½·½·½ + ½·½ + ½ = 0.875; c0 = ½·½/0.875, c1 = ½/0.875. */
TH_TEST(test_attr_hand_worked, "hand-worked attribution")
{
    tr_event ev[3];
    memset(ev, 0, sizeof ev);
    ev[0].pos = 0; ev[0].op = 0; ev[0].slot = 0; ev[0].weight = 0.5f;
    ev[1].pos = 1; ev[1].op = 0; ev[1].slot = 0; ev[1].weight = 0.5f;
    ev[2].pos = 1; ev[2].op = 1; ev[2].slot = 0; ev[2].weight = 1.0f;
    an_attribution a;
    rn_error err;
    CU_ASSERT_EQUAL_FATAL(an_attribute_read(ev, 3, 2, 1.0, 0.0, 1, &a, &err), RN_OK);
    CU_ASSERT_EQUAL(a.n_tokens, 2u);
    CU_ASSERT_DOUBLE_EQUAL(a.tokens[0].coef, 0.25 / 0.875, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(a.tokens[1].coef, 0.5 / 0.875, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(a.terms[1].decay, 0.5, 1e-12);
    an_attribution_free(&a);
    CU_ASSERT_EQUAL(an_attribute_read(ev, 3, 2, 1.0, 0.0, 0, &a, &err), RN_EINPUT); /* no read at 0 */
    an_matrix m;
    CU_ASSERT_EQUAL_FATAL(an_attribute_matrix(ev, 3, 2, 1.0, 0.0, 100, &m, &err), RN_OK);
    CU_ASSERT_EQUAL(m.n, 2);
    CU_ASSERT_DOUBLE_EQUAL(m.values[2], 0.25 / 0.875, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(m.values[1], 0.0, 0);
    an_matrix_free(&m);
    CU_ASSERT_EQUAL(an_attribute_matrix(ev, 3, 2, 1.0, 0.0, 1, &m, &err), RN_EINPUT);
    /* A window past the limit's worth of earlier positions: t0 still decays
     * and normalises the read at 1 but takes no column. */
    CU_ASSERT_EQUAL_FATAL(an_attribute_matrix_range(ev, 3, 2, 1.0, 0.0, 1, 2, 1, &m, &err), RN_OK);
    CU_ASSERT_EQUAL(m.n, 1);
    CU_ASSERT_EQUAL(m.pos[0], 1);
    CU_ASSERT_DOUBLE_EQUAL(m.values[0], 0.5 / 0.875, 1e-12);
    an_matrix_free(&m);
}

typedef struct { tr_event *ev; size_t n, cap; } recorder;

static void rec_access(void *user, int layer, int head, int pos, int op, int k,
                       const uint32_t *slot, const uint32_t *addr, const float *weight)
{
    recorder *r = user;
    for (int j = 0; j < k; j++) {
        if (r->n == r->cap) { r->cap = r->cap * 2 + 64; r->ev = realloc(r->ev, r->cap * sizeof *r->ev); }
        tr_event *e = &r->ev[r->n++];
        e->layer = (uint16_t)layer; e->head = (uint16_t)head; e->pos = pos; e->op = (uint8_t)op;
        e->rank = (uint8_t)j; e->slot = slot[j]; e->addr = addr[j]; e->weight = weight[j];
    }
}

TH_TEST(test_reproduces_model, "attribution reproduces the model's reads")
{
    rn_config c;
    rn_config_default(&c);
    c.vocab_size = 300; c.d_model = 16; c.n_layers = 2; c.n_heads = 2;
    c.d_p = 4; c.order = 2; c.d_v = 4; c.top_k = 3; c.d_ff = 24;
    c.gamma = 0.7f; c.eps = 1e-3f;
    memset(c.cape_mask, 0, sizeof c.cape_mask);
    c.cape_mask[0] = 2; /* head 1 of layer 0 uses CAPE */
    rn_error err;
    CU_ASSERT_EQUAL_FATAL(rn_config_validate(&c, &err), RN_OK);
    rn_model m;
    CU_ASSERT_EQUAL_FATAL(rn_model_create_random(&m, &c, 11, &err), RN_OK);
    for (int64_t i = 0; i < (int64_t)c.vocab_size * c.d_model; i++) m.w.embed[i] *= 40.0f;
    for (int64_t i = 0; i < (int64_t)c.n_heads * c.order * c.d_p * c.d_model; i++) {
        m.w.layer[0].wq[i] *= 40.0f;
        m.w.layer[0].wk[i] *= 40.0f;
    }
    const int T = 48, M = 16, H = 2, dv = 4, D = 16;
    int tok[48];
    for (int t = 0; t < T; t++) tok[t] = (t * 7 + t / 5) % 300;
    rn_runtime *rt;
    CU_ASSERT_EQUAL_FATAL(rn_runtime_create(&m, 16, &rt, &err), RN_OK);
    recorder rec = { 0 };
    rn_probe probe = { .user = &rec, .access = rec_access };
    rn_runtime_set_probe(rt, &probe);
    CU_ASSERT_EQUAL_FATAL(rn_prefill(rt, tok, T, NULL, 0, &err), RN_OK);

    /* layer 0's values from the weights: v = RMSNorm(embed[tok])·W_vᵀ */
    float *x = malloc(sizeof(float) * T * D), *h = malloc(sizeof(float) * T * D);
    float *v = malloc(sizeof(float) * T * H * dv);
    for (int t = 0; t < T; t++) memcpy(x + t * D, m.w.embed + (int64_t)tok[t] * D, sizeof(float) * D);
    rn_rmsnorm_forward(h, NULL, x, m.w.layer[0].attn_norm, T, D, c.norm_eps);
    rn_matmul_forward(v, h, m.w.layer[0].wv, T, D, H * dv, 0);

    double worst = 0;
    int checked = 0;
    for (int head = 0; head < H; head++) {
        tr_event *hev = malloc(rec.n * sizeof *hev);
        size_t nh = 0;
        for (size_t i = 0; i < rec.n; i++)
            if (rec.ev[i].layer == 0 && rec.ev[i].head == head) hev[nh++] = rec.ev[i];
        CU_ASSERT_EQUAL(nh, (size_t)T * 2 * 3);
        /* dense PDMA in double over the recorded addresses */
        double S[16][4], z[16];
        memset(S, 0, sizeof S);
        for (int s = 0; s < M; s++) z[s] = 1.0 / M;
        an_matrix mat;
        CU_ASSERT_EQUAL_FATAL(an_attribute_matrix(hev, nh, M, c.gamma, c.eps, 1000, &mat, &err), RN_OK);
        CU_ASSERT_EQUAL(mat.n, T);
        for (int t = 0; t < T; t++) {
            const float *vt = v + (size_t)t * H * dv + head * dv;
            double o[4] = { 0 };
            for (size_t i = 0; i < nh; i++) {
                if (hev[i].pos != t) continue;
                uint32_t s = hev[i].slot;
                double w = hev[i].weight;
                if (hev[i].op == 0) {
                    double d = pow(1.0 - w, c.gamma);
                    for (int j = 0; j < dv; j++) S[s][j] = d * S[s][j] + w * vt[j];
                    z[s] = d * z[s] + w;
                }
            }
            for (size_t i = 0; i < nh; i++)
                if (hev[i].pos == t && hev[i].op == 1)
                    for (int j = 0; j < dv; j++)
                        o[j] += hev[i].weight * S[hev[i].slot][j] / (z[hev[i].slot] + c.eps);
            an_attribution a;
            CU_ASSERT_EQUAL_FATAL(an_attribute_read(hev, nh, M, c.gamma, c.eps, t, &a, &err), RN_OK);
            double rec_o[4] = { 0 }, num = 0, den = 0;
            for (size_t k = 0; k < a.n_tokens; k++) {
                const float *vk = v + (size_t)a.tokens[k].pos * H * dv + head * dv;
                for (int j = 0; j < dv; j++) rec_o[j] += a.tokens[k].coef * vk[j];
                CU_ASSERT_DOUBLE_EQUAL(mat.values[(size_t)t * T + a.tokens[k].pos], a.tokens[k].coef, 1e-12);
            }
            for (int j = 0; j < dv; j++) { num += (rec_o[j] - o[j]) * (rec_o[j] - o[j]); den += o[j] * o[j]; }
            double rel = sqrt(num / (den + 1e-300));
            if (rel > worst) worst = rel;
            checked++;
            an_attribution_free(&a);
        }
        an_matrix_free(&mat);
        free(hev);
    }
    CU_ASSERT_EQUAL(checked, 2 * T);
    CU_ASSERT(worst < 1e-6);
    if (worst >= 1e-6) fprintf(stderr, "\nattribution relative error %g\n", worst);
    free(x); free(h); free(v); free(rec.ev);
    rn_runtime_free(rt);
    rn_model_free(&m);
}
