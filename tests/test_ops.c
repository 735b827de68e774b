/* test_ops.c — each layer op on its own, against a direct formula written
 * here in double: RMSNorm forward (the ε inside the square root) and
 * backward (dx and the gain gradient dg, against central differences of
 * that formula), SwiGLU forward and backward, address decoding with the
 * per-head scale e^α/τ and CAPE (against a brute force over all M
 * addresses), and one PDMA write + read step (decay (1−w)^γ, 0⁰ = 1, the
 * normaliser z + ε).  The model-level tests (naive forward, gradient check)
 * see these only through the whole network; here a wrong constant in one
 * op fails a test named after it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rn_layers.h"
#include "rn_rng.h"
#include "th.h"

static int close_to(double got, double want, double rel, double abs_)
{
    return fabs(got - want) <= abs_ + rel * fabs(want);
}

static void fill(rn_real *x, int n, rn_rng *r, double lo, double hi)
{
    for (int i = 0; i < n; i++) x[i] = (rn_real)(lo + (hi - lo) * rn_rng_uniform(r));
}

/* y = x / sqrt(mean(x²) + eps) · g for one row, in double. */
static void rms_ref(double *y, const double *x, const double *g, int D, double eps)
{
    double ss = 0;
    for (int i = 0; i < D; i++) ss += x[i] * x[i];
    double s = 1 / sqrt(ss / D + eps);
    for (int i = 0; i < D; i++) y[i] = x[i] * s * g[i];
}

enum { RN = 3, RD = 7 };

TH_TEST(test_rmsnorm_forward, "RMSNorm forward: x / sqrt(mean(x^2) + eps) * g, rstd")
{
    rn_rng r;
    rn_rng_seed(&r, 11);
    rn_real x[RN * RD], g[RD], out[RN * RD], rstd[RN];
    fill(x, RN * RD, &r, -0.6, 0.6); /* small x: eps = 0.25 matters */
    fill(g, RD, &r, 0.5, 1.5);
    const double eps = 0.25;
    rn_rmsnorm_forward(out, rstd, x, g, RN, RD, (rn_real)eps);
    int bad = 0;
    for (int n = 0; n < RN; n++) {
        double xd[RD], gd[RD], y[RD], ss = 0;
        for (int i = 0; i < RD; i++) { xd[i] = x[n * RD + i]; gd[i] = g[i]; ss += xd[i] * xd[i]; }
        rms_ref(y, xd, gd, RD, eps);
        for (int i = 0; i < RD; i++) bad += !close_to(out[n * RD + i], y[i], 1e-6, 1e-7);
        bad += !close_to(rstd[n], 1 / sqrt(ss / RD + eps), 1e-6, 0);
    }
    CU_ASSERT_EQUAL(bad, 0);
}

TH_TEST(test_rmsnorm_backward, "RMSNorm backward: dx and dg against differences of the formula, accumulated")
{
    rn_rng r;
    rn_rng_seed(&r, 12);
    rn_real x[RN * RD], g[RD], out[RN * RD], rstd[RN], dout[RN * RD], dx[RN * RD], dg[RD];
    fill(x, RN * RD, &r, -1, 1);
    fill(g, RD, &r, 0.5, 1.5);
    fill(dout, RN * RD, &r, -1, 1);
    const double eps = 0.1;
    rn_rmsnorm_forward(out, rstd, x, g, RN, RD, (rn_real)eps);
    for (int i = 0; i < RN * RD; i++) dx[i] = 0.5f; /* both accumulate (+=) */
    for (int i = 0; i < RD; i++) dg[i] = -0.25f;
    rn_rmsnorm_backward(dx, dg, dout, x, g, rstd, RN, RD);
    /* L = Σ dout · rmsnorm(x; g), differentiated numerically in double */
    const double h = 1e-6;
    int bad = 0;
    double dg_ref[RD] = {0};
    for (int n = 0; n < RN; n++) {
        double xd[RD], gd[RD], y[RD];
        for (int i = 0; i < RD; i++) { xd[i] = x[n * RD + i]; gd[i] = g[i]; }
        for (int i = 0; i < RD; i++) {
            double lp = 0, lm = 0, keep = xd[i];
            xd[i] = keep + h; rms_ref(y, xd, gd, RD, eps);
            for (int j = 0; j < RD; j++) lp += dout[n * RD + j] * y[j];
            xd[i] = keep - h; rms_ref(y, xd, gd, RD, eps);
            for (int j = 0; j < RD; j++) lm += dout[n * RD + j] * y[j];
            xd[i] = keep;
            bad += !close_to(dx[n * RD + i] - 0.5, (lp - lm) / (2 * h), 1e-4, 1e-5);
            keep = gd[i];
            lp = lm = 0;
            gd[i] = keep + h; rms_ref(y, xd, gd, RD, eps);
            for (int j = 0; j < RD; j++) lp += dout[n * RD + j] * y[j];
            gd[i] = keep - h; rms_ref(y, xd, gd, RD, eps);
            for (int j = 0; j < RD; j++) lm += dout[n * RD + j] * y[j];
            gd[i] = keep;
            dg_ref[i] += (lp - lm) / (2 * h);
        }
    }
    for (int i = 0; i < RD; i++) bad += !close_to(dg[i] + 0.25, dg_ref[i], 1e-4, 1e-5);
    CU_ASSERT_EQUAL(bad, 0);
}

static double silu_u(double g, double u) { return g / (1 + exp(-g)) * u; }

TH_TEST(test_swiglu, "SwiGLU: silu(g) * u and its gradients")
{
    enum { N = 40 };
    rn_rng r;
    rn_rng_seed(&r, 13);
    rn_real g[N], u[N], out[N], dout[N], dg[N], du[N];
    fill(g, N, &r, -6, 6);
    fill(u, N, &r, -2, 2);
    fill(dout, N, &r, -1, 1);
    rn_swiglu_forward(out, g, u, N);
    rn_swiglu_backward(dg, du, dout, g, u, N);
    int bad = 0;
    const double h = 1e-6;
    for (int i = 0; i < N; i++) {
        bad += !close_to(out[i], silu_u(g[i], u[i]), 1e-6, 1e-7);
        double dgn = dout[i] * (silu_u(g[i] + h, u[i]) - silu_u(g[i] - h, u[i])) / (2 * h);
        double dun = dout[i] * (silu_u(g[i], u[i] + h) - silu_u(g[i], u[i] - h)) / (2 * h);
        bad += !close_to(dg[i], dgn, 1e-4, 1e-6);
        bad += !close_to(du[i], dun, 1e-4, 1e-6);
    }
    CU_ASSERT_EQUAL(bad, 0);
}

TH_TEST(test_address_scale, "address decoding: chunk softmax of e^alpha * a / tau, top-K, CAPE slot")
{
    rn_config c;
    rn_config_default(&c);
    c.n_heads = 2;
    c.d_p = 3;
    c.order = 2;
    c.top_k = 4;
    c.tau = 0.8f;
    const int H = 2, U = 2, dp = 3, dk = 6, M = 9, K = 4, rows = 2;
    const int64_t pos0 = 5;
    rn_real alpha[2] = { 0.7f, -0.4f };
    rn_real a[2 * 2 * 6];
    rn_rng r;
    rn_rng_seed(&r, 14);
    fill(a, rows * H * dk, &r, -1.5, 1.5);
    uint32_t addr[2 * 2 * 4], slot[2 * 2 * 4];
    rn_real w[2 * 2 * 4];
    void *mem = aligned_alloc(64, (rn_decode_ws_bytes(U, dp, K) + 63) / 64 * 64);
    rn_decode_ws *ws = rn_decode_ws_init(mem, U, dp, K);
    rn_address_forward(addr, slot, w, a, alpha, &c, 2u /* CAPE on head 1 */, rows, pos0, &ws, 1);
    int bad = 0;
    for (int t = 0; t < rows; t++)
        for (int h = 0; h < H; h++) {
            /* brute force: p_u = softmax(e^alpha · chunk_u / tau), weight of
             * (i0, i1) = p_0[i0]·p_1[i1], address i0·d_p + i1 */
            const rn_real *ah = a + (t * H + h) * dk;
            double p[2][3], wt[9];
            for (int u = 0; u < U; u++) {
                double mx = -1e300, s = 0;
                for (int j = 0; j < dp; j++) mx = fmax(mx, exp(alpha[h]) * ah[u * dp + j] / 0.8);
                for (int j = 0; j < dp; j++) s += p[u][j] = exp(exp(alpha[h]) * ah[u * dp + j] / 0.8 - mx);
                for (int j = 0; j < dp; j++) p[u][j] /= s;
            }
            for (int m = 0; m < M; m++) wt[m] = p[0][m / dp] * p[1][m % dp];
            int used[9] = {0};
            for (int j = 0; j < K; j++) {
                int best = -1;
                for (int m = 0; m < M; m++)
                    if (!used[m] && (best < 0 || wt[m] > wt[best])) best = m;
                used[best] = 1;
                int o = (t * H + h) * K + j;
                bad += (int)addr[o] != best;
                bad += !close_to(w[o], wt[best], 1e-5, 1e-7);
                int want_slot = h == 1 ? (int)(((best - (pos0 + t)) % M + M) % M) : best;
                bad += (int)slot[o] != want_slot;
            }
        }
    free(mem);
    CU_ASSERT_EQUAL(bad, 0);
}

TH_TEST(test_pdma_step, "PDMA step: decay (1-w)^gamma, S and z updates, read / (z + eps)")
{
    enum { M = 5, DV = 3 };
    rn_rng r;
    rn_rng_seed(&r, 15);
    rn_real S[M * DV], z[M], v[DV], o[DV];
    fill(S, M * DV, &r, -1, 1);
    fill(z, M, &r, 0.2, 1.2);
    fill(v, DV, &r, -1, 1);
    double Sd[M * DV], zd[M];
    for (int i = 0; i < M * DV; i++) Sd[i] = S[i];
    for (int i = 0; i < M; i++) zd[i] = z[i];
    /* three writes, the third to the slot of the first (applied in order) */
    uint32_t ws[3] = { 3, 1, 3 };
    rn_real ww[3] = { 0.6f, 0.25f, 0.1f };
    const double gamma = 0.5, eps = 0.1;
    rn_pdma_write(S, z, DV, ws, ww, 3, v, (rn_real)gamma);
    for (int j = 0; j < 3; j++) {
        double d = pow(1 - ww[j], gamma);
        for (int i = 0; i < DV; i++) Sd[ws[j] * DV + i] = d * Sd[ws[j] * DV + i] + ww[j] * v[i];
        zd[ws[j]] = d * zd[ws[j]] + ww[j];
    }
    int bad = 0;
    for (int i = 0; i < M * DV; i++) bad += !close_to(S[i], Sd[i], 1e-6, 1e-7);
    for (int i = 0; i < M; i++) bad += !close_to(z[i], zd[i], 1e-6, 1e-7);
    uint32_t rs[2] = { 3, 0 };
    rn_real rw[2] = { 0.7f, 0.2f };
    rn_pdma_read(o, S, z, DV, rs, rw, 2, (rn_real)eps);
    for (int i = 0; i < DV; i++) {
        double want = 0;
        for (int j = 0; j < 2; j++) want += rw[j] * Sd[rs[j] * DV + i] / (zd[rs[j]] + eps);
        bad += !close_to(o[i], want, 1e-6, 1e-7);
    }
    CU_ASSERT_EQUAL(bad, 0);
    /* 0^0 = 1: with gamma = 0 a full-weight write keeps the old row */
    rn_real S1[DV] = { 1, 2, 3 }, z1[1] = { 0.5f };
    uint32_t s0 = 0;
    rn_real w1 = 1.0f;
    rn_pdma_write(S1, z1, DV, &s0, &w1, 1, v, 0.0f);
    for (int i = 0; i < DV; i++) CU_ASSERT(close_to(S1[i], (i + 1) + v[i], 1e-6, 1e-7));
    CU_ASSERT(close_to(z1[0], 1.5, 1e-6, 0));
    /* gamma = 1 and w = 1: the row is replaced */
    rn_real S2[DV] = { 1, 2, 3 }, z2[1] = { 0.5f };
    rn_pdma_write(S2, z2, DV, &s0, &w1, 1, v, 1.0f);
    for (int i = 0; i < DV; i++) CU_ASSERT(close_to(S2[i], v[i], 1e-6, 1e-7));
    CU_ASSERT(close_to(z2[0], 1.0, 1e-6, 0));
}
