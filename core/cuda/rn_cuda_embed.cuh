/* rn_cuda_embed.cuh — the token embedding's kernels (rn_train.c's embed
 * and its gradient), one source for the CUDA inference runtime
 * (rn_cuda.cu) and the GPU trainer (rn_cuda_train.cu).
 *
 * forward:  x[n,D] = embed[tok[r]], one thread per element
 * backward: gembed[tok[r]] += dres[r] over the rows r in order (the CPU's
 *           serial sum, so the CPU's floats and deterministic), parallel
 *           over the distinct tokens and the columns: the rows come sorted
 *           stably by token (key = token, val = row), and one thread per
 *           (token, column) adds its rows in row order
 *
 * Kernels are static: each .cu including this header has its own copy.
 */
#ifndef RN_CUDA_EMBED_CUH
#define RN_CUDA_EMBED_CUH

#include <cuda_runtime.h>
#include <stdint.h>

static __global__ void k_embed_forward(float *x, const float *embed, const int *tok, int n, int D)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)n * D) return;
    x[i] = embed[(int64_t)tok[i / D] * D + i % D];
}

/* One thread per (sorted row p, column c); the thread whose p starts its
 * token's run does the run. */
static __global__ void k_embed_backward(float *gembed, const float *dres, const uint32_t *key,
                                        const uint32_t *val, int n, int D)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)n * D) return;
    const int64_t p = i / D, c = i % D;
    const uint32_t tok = key[p];
    if (p > 0 && key[p - 1] == tok) return;
    float *g = gembed + (int64_t)tok * D + c;
    float x = *g;
    for (int64_t q = p; q < n && key[q] == tok; q++) x += dres[(int64_t)val[q] * D + c];
    *g = x;
}

#endif
