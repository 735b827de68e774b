/* rn_cuda_gemv.cuh — the generation step's matrix-vector products on the
 * GPU: y[O] = W[O,I]·x (+= when acc) over FP32 or bf16 weights (uint16_t
 * bit patterns, rn_bf16.h), FP32 arithmetic, with two fused prologues so a
 * layer of the step is a handful of launches:
 *
 *   RN_CU_GEMV_PLAIN    x as given (read from global memory)
 *   RN_CU_GEMV_RMSNORM  x normalised with its gain as the block loads it:
 *                       x·rstd ⊙ g, rstd = 1/sqrt(mean(x²) + eps), the row
 *                       sum in double by rn_cu_block_sum — the arithmetic
 *                       and order of k_rmsnorm_forward at the same block
 *                       size, so the same values bit for bit
 *   RN_CU_GEMV_SWIGLU   silu(gate)·up computed as the block loads it, the
 *                       expression of k_swiglu_forward (bit for bit)
 *
 * A block has RN_CU_GEMV_NT threads (RN_CU_GEMV_NT / 32 warps); warp w of
 * block b computes output row b·warps + w.  A prologue variant first fills
 * the block's shared copy of the prepared input (I <= RN_CU_GEMV_MAXI; the
 * caller falls back to the separate kernels beyond); every block prepares
 * it again, which costs O(I) per block against the O(warps·I) weights it
 * streams.
 *
 * Summation order (fixed, so a row's value does not depend on the launch):
 * lane l of the row's warp accumulates, in FP32 with fused multiply-adds,
 * the 16-byte weight vectors l, l + 32, l + 64, … in that order (4 FP32 or
 * 8 bf16 weights a vector, each in element order); then the 32 lanes'
 * partial sums are added by shuffles (lane i takes lane i + 16, then
 * i + 8, …).  Vector loads need I a multiple of the vector width and the
 * matrix 16-byte aligned (rn_cu_gemv_vec); otherwise the VEC = false
 * instance walks single elements, lane l taking l, l + 32, … in order.
 *
 * Kernels are static: each .cu including this header has its own copy.
 */
#ifndef RN_CUDA_GEMV_CUH
#define RN_CUDA_GEMV_CUH

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "rn_cuda_rmsnorm.cuh"

#define RN_CU_GEMV_NT 256   /* threads a block: 8 warps, 8 output rows */
#define RN_CU_GEMV_MAXI 8192 /* the widest input a prologue variant stages (32 KiB) */

enum { RN_CU_GEMV_PLAIN, RN_CU_GEMV_RMSNORM, RN_CU_GEMV_SWIGLU };

/* 16 bytes of weights, loaded in one instruction. */
struct alignas(16) rn_cu_v16 {
    uint32_t u[4];
};

/* FP32 value of one weight. */
__device__ static inline float rn_cu_w(float w) { return w; }
__device__ static inline float rn_cu_w(uint16_t w) { return __uint_as_float((uint32_t)w << 16); }

/* acc += Σ widened weights of vector q · x[0 .. 16/sizeof(T)), in order. */
__device__ static inline float rn_cu_dot16(float acc, const rn_cu_v16 &q, const float *x, float)
{
    for (int e = 0; e < 4; e++) acc = fmaf(__uint_as_float(q.u[e]), x[e], acc);
    return acc;
}
__device__ static inline float rn_cu_dot16(float acc, const rn_cu_v16 &q, const float *x, uint16_t)
{
    for (int e = 0; e < 4; e++) {
        acc = fmaf(__uint_as_float(q.u[e] << 16), x[2 * e], acc);          /* the low half: element 2e */
        acc = fmaf(__uint_as_float(q.u[e] & 0xffff0000u), x[2 * e + 1], acc);
    }
    return acc;
}

/* Whether the 16-byte vector path applies to W[O, I] of element size es. */
__host__ __device__ static inline bool rn_cu_gemv_vec(const void *W, int I, int es)
{
    return I % (16 / es) == 0 && (uintptr_t)W % 16 == 0;
}

/* Blocks for O output rows. */
__host__ __device__ static inline unsigned rn_cu_gemv_blocks(int O)
{
    return (unsigned)((O + RN_CU_GEMV_NT / 32 - 1) / (RN_CU_GEMV_NT / 32));
}

/* y[O] (=|+=) W[O,I]·p(x) with the prologue p of MODE: x and its gain g
 * (RMSNORM, eps), or gate x and up x2 (SWIGLU).  Launch with
 * rn_cu_gemv_blocks(O) blocks of RN_CU_GEMV_NT threads; VEC only where
 * rn_cu_gemv_vec(W, I, sizeof(T)). */
template <typename T, int MODE, bool VEC>
static __global__ void rn_cu_k_gemv(float *y, const T *W, const float *x, const float *x2, const float *g,
                                    int O, int I, int acc, float eps)
{
    __shared__ float xs[MODE == RN_CU_GEMV_PLAIN ? 1 : RN_CU_GEMV_MAXI];
    const float *in = x;
    if (MODE == RN_CU_GEMV_RMSNORM) {
        double s = 0;
        for (int i = threadIdx.x; i < I; i += blockDim.x) s += (double)x[i] * x[i];
        s = rn_cu_block_sum(s);
        const float rs = (float)(1.0 / sqrt(s / I + (double)eps));
        for (int i = threadIdx.x; i < I; i += blockDim.x) xs[i] = x[i] * rs * g[i];
        __syncthreads();
        in = xs;
    } else if (MODE == RN_CU_GEMV_SWIGLU) {
        for (int i = threadIdx.x; i < I; i += blockDim.x) {
            const float a = x[i];
            xs[i] = a / (1 + (float)exp(-(double)a)) * x2[i];
        }
        __syncthreads();
        in = xs;
    }
    const int lane = threadIdx.x % 32, r = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (r >= O) return; /* the whole warp: no barriers below */
    const T *wr = W + (int64_t)r * I;
    float s = 0;
    if (VEC) {
        const int E = 16 / (int)sizeof(T), nv = I / E;
        const rn_cu_v16 *wv = (const rn_cu_v16 *)wr;
        int v = lane;
        /* four loads in flight before their multiply-adds; same order */
        for (; v + 96 < nv; v += 128) {
            const rn_cu_v16 q0 = wv[v], q1 = wv[v + 32], q2 = wv[v + 64], q3 = wv[v + 96];
            s = rn_cu_dot16(s, q0, in + (int64_t)v * E, T());
            s = rn_cu_dot16(s, q1, in + (int64_t)(v + 32) * E, T());
            s = rn_cu_dot16(s, q2, in + (int64_t)(v + 64) * E, T());
            s = rn_cu_dot16(s, q3, in + (int64_t)(v + 96) * E, T());
        }
        for (; v < nv; v += 32) s = rn_cu_dot16(s, wv[v], in + (int64_t)v * E, T());
    } else {
        for (int i = lane; i < I; i += 32) s = fmaf(rn_cu_w(wr[i]), in[i], s);
    }
    for (int off = 16; off > 0; off /= 2) s += __shfl_down_sync(0xffffffffu, s, off);
    if (lane == 0) y[r] = acc ? y[r] + s : s;
}

#endif
