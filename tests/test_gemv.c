/* test_gemv.c — the generation step's matrix-vector kernels (rn_gemv.h)
 * and bf16 conversions (rn_bf16.h): every kernel this CPU can run against a
 * double-precision reference with an error bound, row values independent
 * of the thread count, and the bf16 rounding rule checked exhaustively. */
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "rn_bf16.h"
#include "rn_gemv.h"
#include "rn_rng.h"
#include "th.h"

static const char *const kernels[] = { "c", "avx2", "avx512" };

/* Check y[r] against Σ W[r,i]·x[i] in double: |error| ≤ (cols+2)·ε·Σ|W·x|
 * (the bound of a sum of cols products in any order) plus the rounding of
 * an accumulated y0. */
static int check_rows(const float *y, const double *ref, const double *mag, int rows, int cols)
{
    int bad = 0;
    for (int r = 0; r < rows; r++) {
        double bound = (cols + 2) * (double)FLT_EPSILON * mag[r] + 1e-30;
        if (fabs(y[r] - ref[r]) > bound) {
            if (!bad) fprintf(stderr, "\nrow %d of %dx%d: %.9g vs %.9g (bound %.3g)\n", r, rows, cols, y[r], ref[r], bound);
            bad++;
        }
    }
    return bad;
}

TH_TEST(test_gemv_kernels, "gemv: every kernel of this CPU, fp32 and bf16 weights, within the error bound")
{
    rn_rng rng;
    rn_rng_seed(&rng, 4);
    const int shapes[][2] = { { 1, 1 }, { 3, 7 }, { 4, 8 }, { 5, 16 }, { 9, 17 }, { 13, 31 }, { 37, 288 },
                              { 64, 300 }, { 7, 1000 }, { 300, 64 } };
    int tried = 0;
    const char *orig = rn_gemv_kernel();
    for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++) {
        if (rn_gemv_set_kernel(kernels[k])) continue; /* the CPU lacks it */
        tried++;
        CU_ASSERT_STRING_EQUAL(rn_gemv_kernel(), kernels[k]);
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            int rows = shapes[si][0], cols = shapes[si][1];
            float *W = malloc(sizeof(float) * rows * cols), *x = malloc(sizeof(float) * cols);
            float *y = malloc(sizeof(float) * rows), *y0 = malloc(sizeof(float) * rows);
            uint16_t *Wb = malloc(sizeof(uint16_t) * rows * cols);
            double *ref = malloc(sizeof(double) * rows), *mag = malloc(sizeof(double) * rows);
            for (int i = 0; i < rows * cols; i++) W[i] = (float)rn_rng_normal(&rng);
            for (int i = 0; i < cols; i++) x[i] = (float)rn_rng_normal(&rng);
            for (int r = 0; r < rows; r++) y0[r] = (float)rn_rng_normal(&rng);
            rn_bf16_round(Wb, W, (size_t)rows * cols);
            for (int fmt = 0; fmt < 2; fmt++)
                for (int acc = 0; acc < 2; acc++) {
                    for (int r = 0; r < rows; r++) {
                        double s = acc ? y0[r] : 0, a = acc ? fabs(y0[r]) : 0;
                        for (int i = 0; i < cols; i++) {
                            double w = fmt ? rn_bf16_to_f32(Wb[(size_t)r * cols + i]) : W[(size_t)r * cols + i];
                            s += w * x[i], a += fabs(w * x[i]);
                        }
                        ref[r] = s, mag[r] = a;
                    }
                    memcpy(y, y0, sizeof(float) * rows);
                    if (fmt) rn_gemv_bf16(y, Wb, x, rows, cols, acc);
                    else rn_gemv_f32(y, W, x, rows, cols, acc);
                    CU_ASSERT_EQUAL(check_rows(y, ref, mag, rows, cols), 0);
                }
            free(W); free(x); free(y); free(y0); free(Wb); free(ref); free(mag);
        }
    }
    CU_ASSERT(tried >= 1);
    CU_ASSERT_EQUAL(rn_gemv_set_kernel("no-such-kernel"), -1);
    CU_ASSERT_EQUAL(rn_gemv_set_kernel(orig), 0); /* the rest of the suite runs the default */
}

/* The rows a thread computes do not change a row's value: 1 thread and 2
 * threads give the same bits (a matrix large enough to be split). */
TH_TEST(test_gemv_threads, "gemv: a row's value does not depend on the thread count")
{
    const int rows = 1001, cols = 133;
    rn_rng rng;
    rn_rng_seed(&rng, 8);
    float *W = malloc(sizeof(float) * rows * cols), *x = malloc(sizeof(float) * cols);
    float *y1 = malloc(sizeof(float) * rows), *y2 = malloc(sizeof(float) * rows);
    uint16_t *Wb = malloc(sizeof(uint16_t) * rows * cols);
    for (int i = 0; i < rows * cols; i++) W[i] = (float)rn_rng_normal(&rng);
    for (int i = 0; i < cols; i++) x[i] = (float)rn_rng_normal(&rng);
    rn_bf16_round(Wb, W, (size_t)rows * cols);
    int nt = omp_get_max_threads();
    for (int fmt = 0; fmt < 2; fmt++) {
        omp_set_num_threads(1);
        if (fmt) rn_gemv_bf16(y1, Wb, x, rows, cols, 0); else rn_gemv_f32(y1, W, x, rows, cols, 0);
        omp_set_num_threads(2);
        if (fmt) rn_gemv_bf16(y2, Wb, x, rows, cols, 0); else rn_gemv_f32(y2, W, x, rows, cols, 0);
        CU_ASSERT_EQUAL(memcmp(y1, y2, sizeof(float) * rows), 0);
    }
    omp_set_num_threads(nt);
    free(W); free(x); free(y1); free(y2); free(Wb);
}

/* Every bf16 value widens exactly and rounds back to itself; FP32 values
 * round to the nearer bf16 neighbour, ties to the even one; NaN stays NaN,
 * inf stays inf, overflow goes to inf. */
TH_TEST(test_bf16_rounding, "bf16: exact widening, round to nearest even, NaN and inf")
{
    int bad = 0;
    for (uint32_t b = 0; b < 65536; b++) {
        float f = rn_bf16_to_f32((uint16_t)b);
        if (isnan(f)) { bad += !isnan(rn_bf16_to_f32(rn_bf16_from_f32(f))); continue; }
        bad += rn_bf16_from_f32(f) != b;
    }
    CU_ASSERT_EQUAL(bad, 0);
    rn_rng rng;
    rn_rng_seed(&rng, 2);
    bad = 0;
    for (int i = 0; i < 200000; i++) {
        union { uint32_t u; float f; } v = { (uint32_t)rn_rng_u64(&rng) };
        if (isnan(v.f) || isinf(v.f)) continue;
        uint16_t lo = (uint16_t)(v.u >> 16), hi = (uint16_t)(lo + 1);
        double dl = fabs((double)v.f - rn_bf16_to_f32(lo));
        if (isinf(rn_bf16_to_f32(hi))) continue; /* beyond the largest bf16: checked below */
        double dh = fabs((double)v.f - rn_bf16_to_f32(hi));
        uint16_t want = dl < dh ? lo : dh < dl ? hi : (lo & 1) ? hi : lo;
        bad += rn_bf16_from_f32(v.f) != want;
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(rn_bf16_from_f32(1.0f + 1.0f / 256), rn_bf16_from_f32(1.0f)); /* tie, to even */
    CU_ASSERT_EQUAL(rn_bf16_from_f32(1.0f + 3.0f / 256), rn_bf16_from_f32(1.0f + 4.0f / 256)); /* tie, to even */
    CU_ASSERT(isinf(rn_bf16_to_f32(rn_bf16_from_f32(INFINITY))));
    CU_ASSERT(isinf(rn_bf16_to_f32(rn_bf16_from_f32(FLT_MAX))));
    CU_ASSERT(isnan(rn_bf16_to_f32(rn_bf16_from_f32(NAN))));
}
