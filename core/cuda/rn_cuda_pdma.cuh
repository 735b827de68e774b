/* rn_cuda_pdma.cuh — the PDMA memory's arithmetic on the GPU (rn_pdma.c),
 * one source for the CUDA inference runtime's scans (rn_cuda.cu) and the
 * GPU trainer's (rn_cuda_train.cu): the decay and its proxy derivative,
 * one write S ← d·S + w·v (z ← d·z + w), one read term r·S/(z + ε), and a
 * step's writes and reads for the thread that owns one column of the state
 * (column c < d_v of S; c == d_v: z).
 *
 * The products and sums use the _rn intrinsics so that nvcc does not
 * contract them into FMAs: the CPU's rounding, operation for operation.
 */
#ifndef RN_CUDA_PDMA_CUH
#define RN_CUDA_PDMA_CUH

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

/* d = (1−w)^γ with 0⁰ = 1 (rn_pdma.c's decay). */
__device__ static inline float rn_cu_decay(float w, float gamma)
{
    if (gamma == 1) return 1 - w;
    if (gamma == 0) return 1;
    return (float)pow((double)(1 - w), (double)gamma);
}

/* The proxy derivative of the decay (rn_pdma_decay_grad). */
__device__ static inline float rn_cu_decay_grad(float w, float gamma, float eps_g)
{
    if (gamma == 0) return 0;
    /* rounded as the CPU rounds it: no fused multiply-add */
    double base = __dadd_rn((double)eps_g, __dmul_rn(1.0 - (double)eps_g, 1.0 - (double)w));
    if (gamma == 1) return (float)(-(1.0 - (double)eps_g));
    return (float)(-(double)gamma * (1.0 - (double)eps_g) * pow(base, (double)gamma - 1.0));
}

/* One write of weight w to one column: d·x + w·v (z's column has v = 1). */
__device__ static inline float rn_cu_pdma_update(float x, float w, float v, float gamma)
{
    return __fadd_rn(__fmul_rn(rn_cu_decay(w, gamma), x), __fmul_rn(w, v));
}

/* One read term added to acc: acc + r/(zz + ε)·x. */
__device__ static inline float rn_cu_pdma_read_add(float acc, float r, float zz, float x, float eps)
{
    return __fadd_rn(acc, __fmul_rn(__fdiv_rn(r, __fadd_rn(zz, eps)), x));
}

/* Rows of state loaded together before use (latency hiding) in a step. */
#define RN_CUDA_PS 8

/* The K writes of one step for the thread of column c: slots ws[K] (the
 * top-K slots of a step are distinct, so each thread may apply them in
 * rank order), weights ww[K], this column's value vc (ignored for z).  The
 * rows are loaded RN_CUDA_PS at a time before any is stored, so the loads
 * overlap.  With save, slot j's value before the write goes to
 * save[j·(d_v+1) + c]. */
__device__ static inline void rn_cu_pdma_write(float *S, float *z, const uint32_t *ws, const float *ww, int K,
                                               int c, int dv, float vc, float gamma, float *save)
{
    for (int j0 = 0; j0 < K; j0 += RN_CUDA_PS) {
        float old[RN_CUDA_PS];
#pragma unroll
        for (int q = 0; q < RN_CUDA_PS; q++)
            if (j0 + q < K) old[q] = c < dv ? S[(int64_t)ws[j0 + q] * dv + c] : z[ws[j0 + q]];
#pragma unroll
        for (int q = 0; q < RN_CUDA_PS; q++) {
            const int j = j0 + q;
            if (j >= K) break;
            const float x = rn_cu_pdma_update(old[q], ww[j], c < dv ? vc : 1.0f, gamma);
            if (save) save[(int64_t)j * (dv + 1) + c] = old[q];
            if (c < dv) S[(int64_t)ws[j] * dv + c] = x;
            else z[ws[j]] = x;
        }
    }
}

/* The K reads of one step for the thread of column c: Σ_j r_j·S[s_j, c] /
 * (z[s_j] + ε) over slots rs[K] with weights rw[K], in rank order (0 for
 * z's thread).  With save, slot j's value at read time (c == d_v: z) goes
 * to save[j·(d_v+1) + c]. */
__device__ static inline float rn_cu_pdma_read(const float *S, const float *z, const uint32_t *rs, const float *rw,
                                               int K, int c, int dv, float eps, float *save)
{
    float acc = 0;
    for (int j0 = 0; j0 < K; j0 += RN_CUDA_PS) {
        float zz[RN_CUDA_PS], xs[RN_CUDA_PS];
#pragma unroll
        for (int q = 0; q < RN_CUDA_PS; q++)
            if (j0 + q < K) {
                zz[q] = z[rs[j0 + q]];
                xs[q] = c < dv ? S[(int64_t)rs[j0 + q] * dv + c] : 0.0f;
            }
#pragma unroll
        for (int q = 0; q < RN_CUDA_PS; q++) {
            const int j = j0 + q;
            if (j >= K) break;
            if (save) save[(int64_t)j * (dv + 1) + c] = c < dv ? xs[q] : zz[q];
            if (c < dv) acc = rn_cu_pdma_read_add(acc, rw[j], zz[q], xs[q], eps);
        }
    }
    return acc;
}

#endif
