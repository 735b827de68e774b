/* rn_gemv.h — y = W·x for one row of activations: the products of the
 * generation step, which streams every weight matrix through once per token
 * and is bound by memory bandwidth, not arithmetic.
 *
 * Two weight formats: FP32, and bf16 (the upper 16 bits of an FP32, stored
 * as uint16_t: half the bytes a token reads).  Arithmetic is FP32 in both:
 * a bf16 weight is widened exactly to the FP32 it stands for and multiplied
 * with the FP32 activation, so a bf16 product equals the FP32 product over
 * the rounded weights up to the order of summation.
 *
 * The kernel is chosen once, at the first call, from what the CPU has
 * (AVX-512F, else AVX2 with FMA, else portable C), so a build for any
 * x86-64 still uses the vector units of the machine it runs on.  The
 * environment variable RAMTRACE_GEMV=c|avx2|avx512 forces a kernel (one
 * the CPU lacks falls back to the next below it): the tests check each
 * against a double-precision reference.  Kernels sum in different orders,
 * so their results agree to rounding only.
 *
 * Rows are split among the OpenMP threads of the calling region's team
 * size (omp_get_max_threads) when the matrix is large enough to pay for it.
 * Nothing allocates.
 */
#ifndef RN_GEMV_H
#define RN_GEMV_H

#include <stddef.h>
#include <stdint.h>

#include "rn_bf16.h"

/* y[rows] (=|+= with accumulate) W[rows,cols]·x[cols], W row-major FP32. */
void rn_gemv_f32(float *y, const float *W, const float *x, int rows, int cols, int accumulate);

/* The same with W in bf16 (row-major, cols values per row). */
void rn_gemv_bf16(float *y, const uint16_t *W, const float *x, int rows, int cols, int accumulate);

/* The kernel in use: "avx512", "avx2" or "c". */
const char *rn_gemv_kernel(void);
/* Use kernel `name` from now on (tests and benchmarks compare them): 0, or
 * -1 when the name is unknown or the CPU lacks its instructions. */
int rn_gemv_set_kernel(const char *name);

#endif
