/* test_cuda_scan.c — the slot-parallel formulation of the PDMA memory scan
 * (core/cuda/rn_cuda_scan.h, the design the GPU scan follows) against the
 * sequential CPU scan rn_pdma_scan_forward, on the host.  It does the same
 * arithmetic in the same order per slot, so the results are equal. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rn_cuda_scan.h"
#include "rn_layers.h"
#include "rn_rng.h"
#include "th.h"

/* max |x − y| / max |y| over n values. */
static double rel(const float *x, const float *y, int64_t n)
{
    double d = 0, m = 0;
    for (int64_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)x[i] - y[i]));
        m = fmax(m, fabs((double)y[i]));
    }
    return d / (m > 0 ? m : 1);
}

TH_TEST(test_scan_matches_sequential, "slot-parallel scan == sequential PDMA scan (o, S, z) over two chunks")
{
    static const struct { int n, H, K, dv; int64_t M; float gamma; } cs[] = {
        { 1, 2, 4, 8, 16, 1.0f }, { 37, 3, 4, 8, 16, 0.5f }, { 64, 2, 8, 16, 64, 2.0f },
        { 200, 2, 8, 4, 8, 0.0f }, { 129, 1, 3, 5, 1024, 1.0f }, { 300, 4, 2, 16, 4, 0.5f },
    };
    rn_rng r;
    rn_rng_seed(&r, 99);
    double worst = 0;
    for (size_t ci = 0; ci < sizeof cs / sizeof cs[0]; ci++) {
        const int n = cs[ci].n, H = cs[ci].H, K = cs[ci].K, dv = cs[ci].dv;
        const int64_t M = cs[ci].M;
        size_t nk = (size_t)n * H * K;
        uint32_t *ws = malloc(sizeof(uint32_t) * nk), *rs = malloc(sizeof(uint32_t) * nk);
        float *ww = malloc(sizeof(float) * nk), *rw = malloc(sizeof(float) * nk);
        float *v = malloc(sizeof(float) * n * H * dv);
        float *o1 = malloc(sizeof(float) * n * H * dv), *o2 = malloc(sizeof(float) * n * H * dv);
        float *S1 = malloc(sizeof(float) * M * dv), *S2 = malloc(sizeof(float) * M * dv);
        float *z1 = malloc(sizeof(float) * M), *z2 = malloc(sizeof(float) * M);
        void *mem = malloc(rn_scan_ws_bytes((int64_t)n * K, dv));
        for (int h = 0; h < H; h++) {
            rn_pdma_reset(S1, z1, M, dv);
            rn_pdma_reset(S2, z2, M, dv);
            for (int chunk = 0; chunk < 2; chunk++) {
                /* K distinct slots per row (as top-K gives), weights in (0, 1) */
                for (size_t i = 0; i < (size_t)n * H; i++)
                    for (int j = 0; j < K; j++) {
                        uint32_t s;
                        int dup;
                        do {
                            s = (uint32_t)(rn_rng_u64(&r) % (uint64_t)M);
                            dup = 0;
                            for (int q = 0; q < j; q++) dup |= ws[i * K + q] == s;
                        } while (dup);
                        ws[i * K + j] = s;
                        rs[i * K + j] = (uint32_t)(rn_rng_u64(&r) % (uint64_t)M);
                        ww[i * K + j] = (float)(0.02 + 0.96 * rn_rng_uniform(&r));
                        rw[i * K + j] = (float)rn_rng_uniform(&r);
                    }
                for (int i = 0; i < n * H * dv; i++) v[i] = (float)(rn_rng_uniform(&r) * 2 - 1);
                rn_pdma_scan_forward(o1, S1, z1, v, ws, ww, rs, rw, n, H, h, K, dv, cs[ci].gamma, 1e-6f);
                rn_scan_segmented(o2, S2, z2, v, ws, ww, rs, rw, n, H, h, K, dv, cs[ci].gamma, 1e-6f,
                                  rn_scan_ws_carve(mem, (int64_t)n * K, dv));
                for (int t = 0; t < n; t++) {
                    double e = rel(o2 + (size_t)t * H * dv + (size_t)h * dv,
                                   o1 + (size_t)t * H * dv + (size_t)h * dv, dv);
                    worst = fmax(worst, e);
                    CU_ASSERT(e < 1e-5); /* 0 here: the same operations in the same order */
                }
                CU_ASSERT(rel(S2, S1, M * dv) < 1e-5);
                CU_ASSERT(rel(z2, z1, M) < 1e-5);
            }
        }
        free(mem); free(ws); free(rs); free(ww); free(rw); free(v); free(o1); free(o2);
        free(S1); free(S2); free(z1); free(z2);
    }
    CU_ASSERT(worst < 1e-5);
}
