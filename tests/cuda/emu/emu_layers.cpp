/* emu_layers.cpp — the layer kernels shared by core/cuda/ (its .cuh) run under
 * the host emulation (cuda_runtime.h here) at the inference runtime's block
 * size, several warps to a block, which the emulated trainer (one warp to
 * a block) does not reach: the warp shuffles of the emulation against
 * closed forms, and RMSNorm's kernels (rn_cuda_rmsnorm.cuh: shuffles, then
 * one warp over the warps' sums) against the CPU layer (rn_rmsnorm.c). */
#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "rn_cuda_bf16.cuh"
#include "rn_cuda_rmsnorm.cuh"
extern "C" {
#include "rn_bf16.h"
#include "rn_layers.h"
#include "emu_layers.h"
}

/* Each thread's total over the block (rn_cu_block_sum of t + 1), and per
 * lane the xor-butterfly sum and the inclusive prefix sum (shuffle up) of
 * the lanes' numbers within its warp. */
static __global__ void k_shuffles(double *sum, int *xor_sum, int *scan)
{
    const int t = (int)threadIdx.x, lane = t % 32;
    sum[t] = rn_cu_block_sum((double)(t + 1));
    int v = lane;
    for (int m = 16; m > 0; m /= 2) v += __shfl_xor_sync(0xffffffffu, v, m);
    xor_sum[t] = v;
    int s = lane;
    for (int d = 1; d < 32; d *= 2) {
        int y = __shfl_up_sync(0xffffffffu, s, (unsigned)d);
        if (lane >= d) s += y;
    }
    scan[t] = s;
}

static void test_shuffles(void)
{
    enum { N = 96 }; /* three warps */
    double sum[N];
    int xs[N], sc[N];
    EMU_LAUNCH(k_shuffles, 1, N)(sum, xs, sc);
    for (int t = 0; t < N; t++) {
        const int lane = t % 32;
        CU_ASSERT_EQUAL(sum[t], N * (N + 1) / 2.0);
        CU_ASSERT_EQUAL(xs[t], 31 * 32 / 2);
        CU_ASSERT_EQUAL(sc[t], lane * (lane + 1) / 2);
    }
}

/* |a − b| <= tol·scale, counted into *bad. */
static void near(double a, double b, double tol, double scale, int *bad)
{
    if (!(fabs(a - b) <= tol * scale)) (*bad)++;
}

static void test_rmsnorm(void)
{
    enum { N = 5, D = 300, NT = 256 }; /* D: rows wider than a block's stride, not a multiple of 32 */
    static float x[N * D], g[D], dy[N * D], out[N * D], rs[N], dx[N * D], dg[D];
    static rn_real cx[N * D], cg[D], cdy[N * D], cout[N * D], crs[N], cdx[N * D], cdg[D];
    uint64_t st = 0x9e3779b97f4a7c15ull;
    auto rnd = [&st] { st = st * 6364136223846793005ull + 1442695040888963407ull; return (float)((st >> 40) / 16777216.0 * 2 - 1); };
    for (int i = 0; i < N * D; i++) { cx[i] = x[i] = rnd() * (1 + i % 7); cdy[i] = dy[i] = rnd(); }
    for (int i = 0; i < D; i++) { cg[i] = g[i] = 1 + rnd() / 2; cdg[i] = dg[i] = rnd(); }
    for (int i = 0; i < N * D; i++) cdx[i] = dx[i] = rnd();
    const float eps = 1e-5f;
    EMU_LAUNCH(k_rmsnorm_forward, N, NT)(out, rs, (const float *)x, (const float *)g, (int)D, eps);
    EMU_LAUNCH(k_rmsnorm_backward_dx, N, NT)(dx, (const float *)dy, (const float *)x, (const float *)g,
                                               (const float *)rs, (int)D);
    EMU_LAUNCH(k_rmsnorm_backward_dg, (D + RN_CUDA_DG_COLS - 1) / RN_CUDA_DG_COLS, NT)(
        dg, (const float *)dy, (const float *)x, (const float *)rs, (int)N, (int)D);
    rn_rmsnorm_forward(cout, crs, cx, cg, N, D, eps);
    rn_rmsnorm_backward(cdx, cdg, cdy, cx, cg, crs, N, D);
    /* the double row sums differ in order only: rstd and the outputs agree
     * to the float rounding of the last step (in practice exactly) */
    int bad = 0;
    for (int r = 0; r < N; r++) near(rs[r], crs[r], 2e-7, fabs(crs[r]), &bad);
    for (int i = 0; i < N * D; i++) near(out[i], cout[i], 4e-7, fabs(cout[i]), &bad);
    CU_ASSERT_EQUAL(bad, 0);
    bad = 0;
    for (int i = 0; i < N * D; i++) {
        const int r = i / D;
        const double s = crs[r], scale = fabs(s * cg[i % D] * cdy[i]) + fabs(cdx[i]) + s * fabs(cx[i]) * s * s;
        near(dx[i], cdx[i], 1e-6, scale + 1e-30, &bad);
    }
    CU_ASSERT_EQUAL(bad, 0);
    bad = 0;
    for (int i = 0; i < D; i++) { /* float sums over N rows in another order */
        double scale = fabs(cdg[i]);
        for (int r = 0; r < N; r++) scale += fabs(cdy[r * D + i] * cx[r * D + i] * crs[r]);
        near(dg[i], cdg[i], 1e-6, scale, &bad);
    }
    CU_ASSERT_EQUAL(bad, 0);
}

/* The device conversion to bf16 equals rn_bf16_from_f32 bit for bit: every
 * bf16 value, every value halfway between two (ties to even), one ulp on
 * either side of each halfway point, infinities and NaNs. */
static void test_to_bf16(void)
{
    const int64_t n = 65536 * 4;
    float *src = (float *)malloc(sizeof(float) * n);
    uint16_t *dst = (uint16_t *)malloc(sizeof(uint16_t) * n);
    CU_ASSERT_FATAL(src && dst);
    for (int64_t i = 0; i < 65536; i++) {
        const uint32_t half = ((uint32_t)i << 16) | 0x8000u;
        const uint32_t u[4] = { (uint32_t)i << 16, half, half - 1, half + 1 };
        for (int j = 0; j < 4; j++) memcpy(&src[i * 4 + j], &u[j], sizeof(float));
    }
    EMU_LAUNCH(rn_cu_k_to_bf16, (unsigned)((n + 255) / 256), 256)(dst, (const float *)src, n);
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) bad += dst[i] != rn_bf16_from_f32(src[i]);
    CU_ASSERT_EQUAL(bad, 0);
    free(src);
    free(dst);
}

extern "C" void rn_cuda_emu_layer_tests(CU_pSuite s)
{
    CU_add_test(s, "emulated warp shuffles and block sum (three warps)", test_shuffles);
    CU_add_test(s, "shared RMSNorm kernels, 8 warps a block == CPU RMSNorm", test_rmsnorm);
    CU_add_test(s, "device FP32 -> bf16 == rn_bf16_from_f32 on every bf16 value and tie", test_to_bf16);
}
