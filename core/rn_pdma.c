/* rn_pdma.c — Power Decay Moving Average memory (paper §3.3): sparse writes
 * and reads that touch only the K addressed slots of a head. */
#include <math.h>

#include "rn_layers.h"

void rn_pdma_reset(rn_real *S, rn_real *z, int64_t M, int d_v)
{
    rn_real inv = (rn_real)(1.0 / (double)M);
    for (int64_t i = 0; i < M * d_v; i++) S[i] = 0;
    for (int64_t i = 0; i < M; i++) z[i] = inv;
}

/* d = (1−w)^γ with 0⁰ = 1 (pow(0, 0) is 1 in C99). */
static inline rn_real decay(rn_real w, rn_real gamma)
{
    if (gamma == 1) return 1 - w;
    if (gamma == 0) return 1;
    return (rn_real)pow((double)(1 - w), (double)gamma);
}

void rn_pdma_write(rn_real *S, rn_real *z, int d_v, const uint32_t *slot, const rn_real *w,
                   int K, const rn_real *v, rn_real gamma)
{
    for (int j = 0; j < K; j++) {
        rn_real wj = w[j], d = decay(wj, gamma);
        rn_real *row = S + (size_t)slot[j] * d_v;
        for (int i = 0; i < d_v; i++) row[i] = d * row[i] + wj * v[i];
        z[slot[j]] = d * z[slot[j]] + wj;
    }
}

void rn_pdma_read(rn_real *o, const rn_real *S, const rn_real *z, int d_v, const uint32_t *slot,
                  const rn_real *r, int K, rn_real eps)
{
    for (int i = 0; i < d_v; i++) o[i] = 0;
    for (int j = 0; j < K; j++) {
        rn_real c = r[j] / (z[slot[j]] + eps);
        const rn_real *row = S + (size_t)slot[j] * d_v;
        for (int i = 0; i < d_v; i++) o[i] += c * row[i];
    }
}

void rn_pdma_scan_forward(rn_real *o, rn_real *S, rn_real *z, const rn_real *v,
                          const uint32_t *wslot, const rn_real *ww, const uint32_t *rslot,
                          const rn_real *rw, int n, int H, int h, int K, int d_v,
                          rn_real gamma, rn_real eps)
{
    for (int t = 0; t < n; t++) {
        size_t a = ((size_t)t * H + h) * K, vv = (size_t)t * H * d_v + (size_t)h * d_v;
        rn_pdma_write(S, z, d_v, wslot + a, ww + a, K, v + vv, gamma);
        rn_pdma_read(o + vv, S, z, d_v, rslot + a, rw + a, K, eps);
    }
}
