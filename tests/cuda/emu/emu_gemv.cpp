/* emu_gemv.cpp — the step's GEMV kernels (core/cuda/rn_cuda_gemv.cuh) under
 * the host emulation at the runtime's block size: every weight format
 * (FP32, bf16), prologue (plain, RMSNorm, SwiGLU), load path (16-byte
 * vectors, single elements) and `+=`, on shapes whose O and I are not
 * multiples of the block's rows or the vector width, against a
 * double-precision reference over the same (rounded) weights; and the
 * fused prologues against the separate kernels they replace, bit for bit. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

/* the shared headers' backward kernels are not run here */
#pragma GCC diagnostic ignored "-Wunused-function"
#include "rn_cuda_gemv.cuh"
#include "rn_cuda_swiglu.cuh"
extern "C" {
#include "rn_bf16.h"
#include "emu_layers.h"
}

namespace {

uint64_t g_st = 0x2545f4914f6cdd1dull;
float rnd(void) /* uniform in [-1, 1) */
{
    g_st = g_st * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((g_st >> 40) / 16777216.0 * 2 - 1);
}

/* The FP32 value of weight i of W in format T. */
float wval(const float *W, int64_t i) { return W[i]; }
float wval(const uint16_t *W, int64_t i) { return rn_bf16_to_f32(W[i]); }

/* One launch of the kernel instance that the runtime picks for W. */
template <typename T, int MODE>
void gemv(float *y, const T *W, const float *x, const float *x2, const float *g, int O, int I, int acc, float eps)
{
    if (rn_cu_gemv_vec(W, I, (int)sizeof(T)))
        EMU_LAUNCH((rn_cu_k_gemv<T, MODE, true>), rn_cu_gemv_blocks(O), RN_CU_GEMV_NT)(y, W, x, x2, g, O, I, acc, eps);
    else
        EMU_LAUNCH((rn_cu_k_gemv<T, MODE, false>), rn_cu_gemv_blocks(O), RN_CU_GEMV_NT)(y, W, x, x2, g, O, I, acc, eps);
}

/* One case: O rows of I, weights of format T (bf16: FP32 values rounded),
 * prologue MODE, acc; returns the number of rows outside the bound.
 * The reference: the prologue and the dot product in double over the same
 * weights.  Bound, first order in u = 2^-24: the prologue's roundings
 * (RMSNorm: rstd to float and two products, 3u; SwiGLU: exp to float,
 * the add, the division, the product, 4u) and the sum's — a lane's chain
 * of at most ceil(I/32) fused multiply-adds (I/32 + 1 roundings with the
 * first), five shuffle adds, the `+=` — so
 * |y − ref| <= (ceil(I/32) + 12)·u·(Σ|w_i·p_i| + |y_old|). */
template <typename T, int MODE> int one_case(int O, int I, int acc, int *vec_used)
{
    const float eps = 1e-5f;
    float *Wf = (float *)malloc(sizeof(float) * O * I), *x = (float *)malloc(sizeof(float) * I),
          *x2 = (float *)malloc(sizeof(float) * I), *g = (float *)malloc(sizeof(float) * I),
          *y = (float *)malloc(sizeof(float) * O), *y0 = (float *)malloc(sizeof(float) * O);
    T *W = (T *)malloc(sizeof(T) * O * I);
    for (int64_t i = 0; i < (int64_t)O * I; i++) Wf[i] = rnd() * 0.5f;
    if (sizeof(T) == 2) rn_bf16_round((uint16_t *)W, Wf, (size_t)O * I);
    else memcpy(W, Wf, sizeof(float) * O * I);
    for (int i = 0; i < I; i++) { x[i] = rnd() * (1 + i % 5); x2[i] = rnd() * 2; g[i] = 1 + rnd() / 2; }
    for (int r = 0; r < O; r++) y0[r] = y[r] = acc ? rnd() * 3 : 0;
    *vec_used = rn_cu_gemv_vec(W, I, (int)sizeof(T));
    gemv<T, MODE>(y, W, x, x2, g, O, I, acc, eps);
    double *p = (double *)malloc(sizeof(double) * I), ss = 0;
    for (int i = 0; i < I; i++) ss += (double)x[i] * x[i];
    const double rs = 1.0 / sqrt(ss / I + eps);
    for (int i = 0; i < I; i++)
        p[i] = MODE == RN_CU_GEMV_RMSNORM ? x[i] * rs * g[i]
             : MODE == RN_CU_GEMV_SWIGLU  ? x[i] / (1 + exp(-(double)x[i])) * x2[i]
                                          : x[i];
    int bad = 0;
    const double u = ldexp(1.0, -24);
    for (int r = 0; r < O; r++) {
        double ref = acc ? y0[r] : 0, mag = fabs(acc ? y0[r] : 0.0);
        for (int i = 0; i < I; i++) {
            const double t = (double)wval(W, (int64_t)r * I + i) * p[i];
            ref += t;
            mag += fabs(t);
        }
        const double bound = ((I + 31) / 32 + 12) * u * mag;
        if (!(fabs(y[r] - ref) <= bound)) bad++;
    }
    free(Wf); free(x); free(x2); free(g); free(y); free(y0); free(W); free(p);
    return bad;
}

/* Every case of one weight format: I = 1096 (the vector path, long enough
 * that the first lanes take the four-loads loop: 274 FP32 vectors, 137
 * bf16 ones), 203 (single elements), 1 (one lane busy); O = 37 (not a
 * multiple of the block's 8 rows), 5 (one block, partly empty). */
template <typename T> void all_cases(void)
{
    static const int shapes[][2] = { { 37, 1096 }, { 37, 203 }, { 5, 1 }, { 5, 1096 } };
    int bad = 0, vec = 0, scalar = 0;
    for (auto &s : shapes)
        for (int acc = 0; acc < 2; acc++) {
            int v = 0;
            bad += one_case<T, RN_CU_GEMV_PLAIN>(s[0], s[1], acc, &v);
            bad += one_case<T, RN_CU_GEMV_RMSNORM>(s[0], s[1], acc, &v);
            bad += one_case<T, RN_CU_GEMV_SWIGLU>(s[0], s[1], acc, &v);
            vec += v, scalar += !v;
        }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(vec > 0 && scalar > 0); /* both load paths were run */
}

void test_gemv_f32(void) { all_cases<float>(); }
void test_gemv_bf16(void) { all_cases<uint16_t>(); }

/* The fused prologues equal the separate kernels they replace (RMSNorm at
 * the runtime's 256 threads a row; SwiGLU elementwise) followed by the
 * plain GEMV, bit for bit, for both weight formats. */
template <typename T> int fused_vs_separate(int O, int I)
{
    const float eps = 1e-5f;
    float *Wf = (float *)malloc(sizeof(float) * O * I), *x = (float *)malloc(sizeof(float) * I),
          *x2 = (float *)malloc(sizeof(float) * I), *g = (float *)malloc(sizeof(float) * I),
          *h = (float *)malloc(sizeof(float) * I), *a = (float *)malloc(sizeof(float) * O),
          *b = (float *)malloc(sizeof(float) * O);
    T *W = (T *)malloc(sizeof(T) * O * I);
    for (int64_t i = 0; i < (int64_t)O * I; i++) Wf[i] = rnd();
    if (sizeof(T) == 2) rn_bf16_round((uint16_t *)W, Wf, (size_t)O * I);
    else memcpy(W, Wf, sizeof(float) * O * I);
    for (int i = 0; i < I; i++) { x[i] = rnd() * 4; x2[i] = rnd(); g[i] = 1 + rnd() / 4; }
    int diff = 0;
    gemv<T, RN_CU_GEMV_RMSNORM>(a, W, x, NULL, g, O, I, 0, eps);
    EMU_LAUNCH(k_rmsnorm_forward, 1, 256)(h, (float *)NULL, (const float *)x, (const float *)g, I, eps);
    gemv<T, RN_CU_GEMV_PLAIN>(b, W, h, NULL, NULL, O, I, 0, 0.0f);
    diff += memcmp(a, b, sizeof(float) * O) != 0;
    gemv<T, RN_CU_GEMV_SWIGLU>(a, W, x, x2, NULL, O, I, 0, 0.0f);
    EMU_LAUNCH(k_swiglu_forward, (unsigned)((I + 255) / 256), 256)(h, (const float *)x, (const float *)x2, (int64_t)I);
    gemv<T, RN_CU_GEMV_PLAIN>(b, W, h, NULL, NULL, O, I, 0, 0.0f);
    diff += memcmp(a, b, sizeof(float) * O) != 0;
    free(Wf); free(x); free(x2); free(g); free(h); free(a); free(b); free(W);
    return diff;
}

void test_fused(void)
{
    CU_ASSERT_EQUAL(fused_vs_separate<float>(19, 600), 0);
    CU_ASSERT_EQUAL(fused_vs_separate<uint16_t>(19, 600), 0);
    CU_ASSERT_EQUAL(fused_vs_separate<float>(9, 301), 0);
    CU_ASSERT_EQUAL(fused_vs_separate<uint16_t>(9, 301), 0);
}

} // namespace

extern "C" void rn_cuda_emu_gemv_tests(CU_pSuite s)
{
    CU_add_test(s, "step GEMV, FP32 weights (plain, RMSNorm, SwiGLU; vector and scalar loads) == double reference",
                test_gemv_f32);
    CU_add_test(s, "step GEMV, bf16 weights (plain, RMSNorm, SwiGLU; vector and scalar loads) == double reference",
                test_gemv_bf16);
    CU_add_test(s, "fused RMSNorm / SwiGLU prologues == the separate kernels then the plain GEMV, bit for bit",
                test_fused);
}
